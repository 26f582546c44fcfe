-- The inbound secret rotates like an outbound one: the previous secret keeps verifying until
-- previous_expires_at (none: it stopped at the rotation), so a partner can deploy the new secret
-- without a window of refused requests.
ALTER TABLE inbound_secrets
  ADD COLUMN previous_secret_ciphertext text,
  ADD COLUMN previous_secret_fingerprint text,
  ADD COLUMN previous_expires_at timestamptz;
