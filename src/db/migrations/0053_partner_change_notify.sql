-- The team pages read partners (the name heads the page); migration 0030 announced only updates.
-- Every table a cached page reads announces every kind of change on its channel, so that one rule
-- holds without exceptions (test/portal/change-cache-coverage.test.ts checks it). PGlite only, as
-- in 0030.
DO $$
BEGIN
  IF current_setting('pys.notify_changes', true) = 'on' THEN
    CREATE TRIGGER partners_insert_notify AFTER INSERT ON partners
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER partners_delete_notify AFTER DELETE ON partners
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
  END IF;
END
$$;
