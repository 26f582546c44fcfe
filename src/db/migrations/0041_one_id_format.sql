-- One id format (src/ids.ts): a prefix naming what the id names, '_', then 22 base58 characters
-- drawn uniformly (58^22 ≈ 2^128.9). Most ids are made by newId() in src/ids.ts; the two the
-- database makes itself (webhook deliveries, fanned out by INSERT … SELECT in one statement, and
-- embed ids, made by the trigger that creates a partner's settings) now come from new_id() below,
-- in the same format. Ids made before this migration keep their old form (`dlv_`/`emb_` and 32 hex
-- digits) and stay valid.
CREATE FUNCTION new_id(prefix text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  alphabet constant text := '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  id text := prefix || '_';
  n int := 0;
  bytes bytea;
  b int;
BEGIN
  WHILE n < 22 LOOP
    -- A version-4 UUID's 16 bytes, less the two that carry its version and variant bits: 14
    -- uniformly random bytes (gen_random_uuid draws from a cryptographic source).
    bytes := decode(replace(gen_random_uuid()::text, '-', ''), 'hex');
    FOR i IN 0..15 LOOP
      CONTINUE WHEN i = 6 OR i = 8;
      b := get_byte(bytes, i);
      -- Bytes at or above 232 (4 × 58) are dropped, so b % 58 stays uniform, as in newId().
      IF b < 232 AND n < 22 THEN
        id := id || substr(alphabet, (b % 58) + 1, 1);
        n := n + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN id;
END
$$;

ALTER TABLE webhook_deliveries ALTER COLUMN id SET DEFAULT new_id('dlv');

CREATE OR REPLACE FUNCTION new_embed_id() RETURNS text LANGUAGE sql AS $$
  SELECT new_id('emb')
$$;
