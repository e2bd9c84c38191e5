-- +goose Up
-- plans.yaml's onePerGlobalAccount decides which plans a global account may
-- hold only once; the database cannot read plans.yaml, so the accept
-- transaction writes the plan's name into one_per_global_account_plan when
-- the plan has the flag (NULL otherwise), and a unique index on the pair
-- keeps two concurrent PUTs from both winning. NULLs are distinct, so plans
-- without the flag are unconstrained. It replaces the trial-only index.
ALTER TABLE instances ADD COLUMN one_per_global_account_plan text;
UPDATE instances SET one_per_global_account_plan = plan_name WHERE plan_name = 'trial';
-- free was flagged but never enforced: an account that already holds several
-- keeps them, and its oldest one is the one that counts.
UPDATE instances SET one_per_global_account_plan = plan_name
WHERE instance_id IN (
    SELECT DISTINCT ON (global_account_id) instance_id FROM instances
    WHERE plan_name = 'free' ORDER BY global_account_id, created_at, instance_id);
CREATE UNIQUE INDEX instances_one_per_global_account
    ON instances (global_account_id, one_per_global_account_plan);
DROP INDEX instances_one_trial_per_global_account;

-- +goose Down
DROP INDEX instances_one_per_global_account;
ALTER TABLE instances DROP COLUMN one_per_global_account_plan;
CREATE UNIQUE INDEX instances_one_trial_per_global_account
    ON instances (global_account_id)
    WHERE plan_name = 'trial';
