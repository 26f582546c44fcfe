-- #16, the portal's webhook pages on PGlite: they keep what they read in memory until the data
-- behind them changes (portal/change-cache.ts). Every committed statement that changes a row
-- of a table those pages read sends a notification on the channel `webhook_changes`, whoever wrote
-- it (the portal, the API's inbound endpoint, the dispatcher, the health and retention jobs, the
-- indexer). PGlite delivers it to its one process before the writing call returns, so the next page
-- load reads afresh.
--
-- Only where the session says so (`pys.notify_changes = on`, set by the PGlite client at start):
-- with PostgreSQL nothing listens (several processes share the server, and the pages read directly),
-- and a NOTIFY would serialise the committing transactions of every writer for nothing. A statement
-- that changed no row (the dispatcher's claim finding nothing due, a retention pass with nothing
-- old) notifies nobody.
CREATE FUNCTION notify_webhook_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('pys.notify_changes', true) = 'on' AND EXISTS (SELECT 1 FROM changed_rows) THEN
    PERFORM pg_notify('webhook_changes', '');
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
    -- One trigger per table and operation: a trigger with a transition table takes one event only.
    CREATE TRIGGER webhook_destinations_insert_notify AFTER INSERT ON webhook_destinations
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_destinations_update_notify AFTER UPDATE ON webhook_destinations
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_destinations_delete_notify AFTER DELETE ON webhook_destinations
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();

    CREATE TRIGGER webhook_deliveries_insert_notify AFTER INSERT ON webhook_deliveries
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_deliveries_update_notify AFTER UPDATE ON webhook_deliveries
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_deliveries_delete_notify AFTER DELETE ON webhook_deliveries
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();

    -- Attempts are the health figures (success rate, latency, last success and failure).
    CREATE TRIGGER webhook_delivery_attempts_insert_notify AFTER INSERT ON webhook_delivery_attempts
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_delivery_attempts_update_notify AFTER UPDATE ON webhook_delivery_attempts
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER webhook_delivery_attempts_delete_notify AFTER DELETE ON webhook_delivery_attempts
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();

    CREATE TRIGGER inbound_events_insert_notify AFTER INSERT ON inbound_events
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER inbound_events_update_notify AFTER UPDATE ON inbound_events
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER inbound_events_delete_notify AFTER DELETE ON inbound_events
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();

    CREATE TRIGGER inbound_secrets_insert_notify AFTER INSERT ON inbound_secrets
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER inbound_secrets_update_notify AFTER UPDATE ON inbound_secrets
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER inbound_secrets_delete_notify AFTER DELETE ON inbound_secrets
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();

    -- The lifecycle event page shows an event as stored.
    CREATE TRIGGER events_insert_notify AFTER INSERT ON events
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER events_update_notify AFTER UPDATE ON events
      REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
    CREATE TRIGGER events_delete_notify AFTER DELETE ON events
      REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_change();
  END IF;
END
$$;
