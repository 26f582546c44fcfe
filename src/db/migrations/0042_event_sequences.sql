-- Ordered events and the events feed (issue #35).
--
-- Every stored event but a test event (`ping`) gets two numbers, in the transaction that inserts it:
--   partner_seq  strictly increasing per (partner, environment): the feed's cursor position;
--   product_seq  strictly increasing per product: what a receiver orders a product's events by
--                (sent as the `X-Service-Sequence` header, listed by the feed).
-- Each comes from a counter row in event_sequences, incremented by UPDATE … RETURNING under the
-- row lock, which is held until the inserting transaction ends. So a second writer of the same
-- partner waits for the first to commit or roll back before it takes the next number: numbers become
-- visible in the order they were given, and a reader that has seen number n has seen every number
-- below n that will ever exist. That is what lets the feed page forward from a cursor while new
-- events arrive without missing any (a bigserial, like `seq`, is handed out before commit and can
-- become visible out of order). A rollback (of the transaction, or of a COPY chunk to its
-- savepoint) takes its numbers back with it. Gaps can still occur: a duplicate event skipped by
-- ON CONFLICT DO NOTHING has already taken its numbers (the check runs after this BEFORE trigger).
--
-- Lock order: partner counter, then product counter, so two writers of one partner never deadlock
-- on them. A writer of several partners in one transaction (the indexer) locks their counters in
-- sorted order first (src/db/chain-events-copy.ts); PostgreSQL's deadlock detection (40P01, a
-- retryable error for the workers) covers what is left.
CREATE TABLE event_sequences (
  partner_id   text NOT NULL,
  environment  text NOT NULL,
  product_id   text NOT NULL,     -- '' for the partner environment's own counter
  last_value   bigint NOT NULL,
  PRIMARY KEY (partner_id, environment, product_id)
);

ALTER TABLE events ADD COLUMN partner_seq bigint, ADD COLUMN product_seq bigint;

-- Existing events, in the order they were stored.
WITH numbered AS (
  SELECT id,
    row_number() OVER (PARTITION BY partner_id, environment ORDER BY seq) AS p,
    CASE WHEN product_id IS NOT NULL
      THEN row_number() OVER (PARTITION BY product_id ORDER BY seq) END AS r
  FROM events WHERE event_type <> 'ping'
)
UPDATE events e SET partner_seq = n.p, product_seq = n.r FROM numbered n WHERE e.id = n.id;

INSERT INTO event_sequences (partner_id, environment, product_id, last_value)
SELECT partner_id, environment, '', max(partner_seq) FROM events
WHERE partner_seq IS NOT NULL GROUP BY partner_id, environment;
INSERT INTO event_sequences (partner_id, environment, product_id, last_value)
SELECT partner_id, environment, product_id, max(product_seq) FROM events
WHERE product_seq IS NOT NULL GROUP BY partner_id, environment, product_id;

CREATE FUNCTION next_event_sequence(p text, env text, prd text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v bigint;
BEGIN
  UPDATE event_sequences SET last_value = last_value + 1
  WHERE partner_id = p AND environment = env AND product_id = prd
  RETURNING last_value INTO v;
  IF NOT FOUND THEN
    INSERT INTO event_sequences AS s (partner_id, environment, product_id, last_value)
    VALUES (p, env, prd, 1)
    ON CONFLICT (partner_id, environment, product_id)
      DO UPDATE SET last_value = s.last_value + 1
    RETURNING last_value INTO v;
  END IF;
  RETURN v;
END
$$;

CREATE FUNCTION assign_event_sequences() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.event_type = 'ping' THEN
    RETURN NEW;
  END IF;
  NEW.partner_seq := next_event_sequence(NEW.partner_id, NEW.environment, '');
  IF NEW.product_id IS NOT NULL THEN
    NEW.product_seq := next_event_sequence(NEW.partner_id, NEW.environment, NEW.product_id);
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER events_sequences BEFORE INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION assign_event_sequences();

-- The feed reads a partner environment's events by partner_seq (both directions); unique, so the
-- numbers cannot repeat whatever writes them.
CREATE UNIQUE INDEX events_partner_feed ON events (partner_id, environment, partner_seq)
  WHERE partner_seq IS NOT NULL;
