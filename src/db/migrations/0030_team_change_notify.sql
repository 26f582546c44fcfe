-- #16, the portal's keys, team and audit pages on PGlite: kept in memory until what they show
-- changes, as the webhook pages are (migration 0029, portal/change-cache.ts), on their own channel
-- so that a sign-in does not drop the webhook pages nor a delivery these. Same rule: only where the
-- session sets `pys.notify_changes` (PGlite), and not for a statement that changed no row.
CREATE FUNCTION notify_team_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('pys.notify_changes', true) = 'on' AND EXISTS (SELECT 1 FROM changed_rows) THEN
    PERFORM pg_notify('team_changes', '');
  END IF;
  RETURN NULL;
END
$$;

-- The triggers exist only where something listens: in an embedded (PGlite) database, whose client
-- sets pys.notify_changes before it migrates. On PostgreSQL nothing listens, and a statement trigger
-- with a transition table still costs every write (measured on bench:webhooks: 10–15 % of the
-- outbound deliveries/s), so none is made there.
DO $$
BEGIN
  IF current_setting('pys.notify_changes', true) = 'on' THEN
    CREATE TRIGGER api_keys_insert_notify AFTER INSERT ON api_keys
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER api_keys_update_notify AFTER UPDATE ON api_keys
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER api_keys_delete_notify AFTER DELETE ON api_keys
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();

    -- A key's last use (written at most once a minute per key).
    CREATE TRIGGER api_key_usage_insert_notify AFTER INSERT ON api_key_usage
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER api_key_usage_update_notify AFTER UPDATE ON api_key_usage
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER api_key_usage_delete_notify AFTER DELETE ON api_key_usage
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();

    CREATE TRIGGER portal_members_insert_notify AFTER INSERT ON portal_members
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER portal_members_update_notify AFTER UPDATE ON portal_members
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER portal_members_delete_notify AFTER DELETE ON portal_members
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();

    CREATE TRIGGER portal_audit_log_insert_notify AFTER INSERT ON portal_audit_log
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER portal_audit_log_update_notify AFTER UPDATE ON portal_audit_log
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
    CREATE TRIGGER portal_audit_log_delete_notify AFTER DELETE ON portal_audit_log
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();

    -- The partner's name heads the team page and names the keys' owner.
    CREATE TRIGGER partners_update_notify AFTER UPDATE ON partners
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_team_change();
  END IF;
END
$$;
