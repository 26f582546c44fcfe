-- Product lifecycle: a deploy hold and the signed deployment transaction.
--
-- deploy_held: a pending_deploy product the worker must not deploy yet (created with
-- `product create --hold`, released by `product release`; the demo keeps one per partner
-- environment pending on purpose; a deployment that reverted is held for the operator instead of
-- being retried and paying gas in a loop).
-- deploy_raw_tx: the signed deployment transaction, stored with deploy_tx_hash BEFORE it is sent, so
-- a worker that dies between signing and broadcasting rebroadcasts the same transaction (same
-- nonce, same hash) instead of deploying a second engine.
ALTER TABLE products ADD COLUMN deploy_held boolean NOT NULL DEFAULT false;
ALTER TABLE products ADD COLUMN deploy_raw_tx text;
