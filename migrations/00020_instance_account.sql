-- +goose Up
-- The hyperscaler account (Gardener binding) an instance's runtime is created
-- with, recorded when the account is claimed (upstream's column name), and
-- whether it is an EU-access account. Multi-account global accounts count
-- their instances per binding from this column, under a lock, when choosing
-- one (storage ClaimAccountLocked).
--
-- Its index is built by 00022, concurrently: a transactional CREATE INDEX on
-- instances would block every write to it while it builds. (This migration
-- built it itself until 00022 took it over; databases migrated then have it,
-- and 00022's IF NOT EXISTS leaves it as it is.)
ALTER TABLE instances ADD COLUMN subscription_secret_name text,
	ADD COLUMN eu_access boolean NOT NULL DEFAULT false;
UPDATE instances SET subscription_secret_name = resolved_parameters->>'targetSecret'
	WHERE resolved_parameters->>'targetSecret' IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS instances_subscription_secret_name_idx;
ALTER TABLE instances DROP COLUMN subscription_secret_name, DROP COLUMN eu_access;
