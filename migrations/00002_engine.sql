-- +goose Up
-- job_id links an operation to its River job, so that a watch can wake a
-- waiting operation at once instead of at its next poll.
ALTER TABLE operations ADD COLUMN job_id bigint;

-- cluster_id is the UUID BTP Manager knows the runtime by; generated once per
-- instance and reused on every write of the sap-btp-manager Secret.
ALTER TABLE instances ADD COLUMN cluster_id text NOT NULL DEFAULT '';
CREATE INDEX instances_runtime_id_idx ON instances (runtime_id) WHERE runtime_id <> '';

-- instances_archive keeps a summary of every deprovisioned instance after its
-- row is gone: operators still see it, its ID is never reused, and a platform
-- polling the finished deprovisioning gets 410 Gone.
CREATE TABLE instances_archive (
    instance_id                 text PRIMARY KEY,
    runtime_id                  text NOT NULL,
    global_account_id           text NOT NULL,
    subaccount_id               text NOT NULL,
    plan_id                     text NOT NULL,
    plan_name                   text NOT NULL,
    platform_region             text NOT NULL,
    provider                    text NOT NULL,
    provider_region             text NOT NULL,
    shoot_name                  text NOT NULL DEFAULT '',
    provisioning_state          text NOT NULL DEFAULT '',
    last_deprovisioning_id      text NOT NULL,
    instance_created_at         timestamptz NOT NULL,
    deprovisioning_started_at   timestamptz NOT NULL,
    archived_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instances_archive_global_account_idx ON instances_archive (global_account_id);
CREATE INDEX instances_archive_archived_at_idx ON instances_archive (archived_at, instance_id);

-- +goose Down
DROP TABLE instances_archive;
DROP INDEX instances_runtime_id_idx;
ALTER TABLE instances DROP COLUMN cluster_id;
ALTER TABLE operations DROP COLUMN job_id;
