-- +goose Up
-- Counting the instances on shared hyperscaler accounts (storage
-- SharedAccountUsage) reads this index: every trial provisioning asks, so the
-- count must read the users of those accounts, not every instance.
-- resolved_parameters is written once per provisioning or update, so the index
-- costs the operations' frequent updates nothing.
CREATE INDEX instances_target_secret_idx ON instances ((resolved_parameters->>'targetSecret'));

-- +goose Down
DROP INDEX instances_target_secret_idx;
