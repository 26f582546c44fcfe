-- Partners: the wallets and payment apps that offer our products. Every key, product, secret and
-- event belongs to one partner and one of its two environments (live, test).
CREATE TABLE partners (
  id          text PRIMARY KEY,              -- ptn_…
  name        text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now()
);
