-- +goose Up
-- instances.deleted_at was never written: a deprovisioned instance moves to
-- instances_archive and leaves instances (00006, Store.ArchiveAndRemove). The
-- one-trial rule's index loses its always-true condition on it.
DROP INDEX instances_one_trial_per_global_account;
ALTER TABLE instances DROP COLUMN deleted_at;
-- One trial per global account is a rule of the product; the database enforces
-- it so that two concurrent PUTs cannot both win.
CREATE UNIQUE INDEX instances_one_trial_per_global_account
    ON instances (global_account_id)
    WHERE plan_name = 'trial';

-- +goose Down
DROP INDEX instances_one_trial_per_global_account;
ALTER TABLE instances ADD COLUMN deleted_at timestamptz;
CREATE UNIQUE INDEX instances_one_trial_per_global_account
    ON instances (global_account_id)
    WHERE plan_name = 'trial' AND deleted_at IS NULL;
