-- The product rules of src/db/product-rules.ts, enforced by the schema too (#13): before, only the
-- CLI checked them and the table allowed any slug and fees up to 10000 bps each. The engine refuses
-- fees above 5000 bps in total, so no row written from the chain can break the second rule.
ALTER TABLE products
  ADD CONSTRAINT products_slug_pattern CHECK (slug ~ '^[a-z0-9][a-z0-9-]{1,62}$');
ALTER TABLE products
  ADD CONSTRAINT products_total_fee_cap CHECK (service_fee_bps + partner_fee_bps <= 5000);
