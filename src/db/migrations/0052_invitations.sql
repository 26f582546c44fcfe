-- Invitations have states: invited (until invite_expires_at), accepted (at the first sign-in), or
-- expired (not accepted in time: no sign-in until an owner or admin resends it). Members from
-- before this were full members already.
ALTER TABLE portal_members
  ADD COLUMN accepted_at timestamptz,
  ADD COLUMN invite_expires_at timestamptz;
UPDATE portal_members SET accepted_at = created_at;
