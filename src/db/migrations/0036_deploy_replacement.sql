-- #29: a stuck engine deployment is replaced at the same nonce with higher fees, like the operator's
-- transactions (0035). deploy_sent_block: the head when the current attempt was signed, from which
-- its wait is counted. deploy_prior_tx_hashes: the attempts it replaced; any of them may be the one
-- mined, so none is forgotten (a deployment is redone only when no attempt has a receipt).
ALTER TABLE products ADD COLUMN deploy_sent_block bigint;
ALTER TABLE products ADD COLUMN deploy_prior_tx_hashes text[] NOT NULL DEFAULT '{}';
