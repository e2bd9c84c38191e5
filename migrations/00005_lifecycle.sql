-- +goose Up
-- state is the runtime's state as operators see it (/info/runtimes). It is
-- written in the same transaction as every operation change that moves it,
-- so a listing filters and counts on an indexed column instead of deriving
-- each instance's state from its newest operations.
ALTER TABLE instances ADD COLUMN state text NOT NULL DEFAULT 'provisioning'
    CHECK (state IN ('provisioning', 'succeeded', 'failed', 'deprovisioning', 'deprovisioned', 'suspended'));
-- shoot_name is the cluster's name, known once provisioning has chosen it.
ALTER TABLE instances ADD COLUMN shoot_name text NOT NULL DEFAULT '';
-- resolved_parameters are the values a successful provisioning ran with
-- (region, machine type, autoscaler, zones, target secret...): what GET
-- instance shows. Never credentials.
ALTER TABLE instances ADD COLUMN resolved_parameters jsonb NOT NULL DEFAULT '{}'::jsonb;
-- expired_at is set when a trial or free instance expires; it is suspended
-- and cannot be resumed.
ALTER TABLE instances ADD COLUMN expired_at timestamptz;

-- A deprovisioning that suspends: the runtime goes, the instance stays.
ALTER TABLE operations ADD COLUMN temporary boolean NOT NULL DEFAULT false;

UPDATE instances i SET state = CASE
        WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' THEN 'deprovisioned'
        WHEN lo.state = 'failed' THEN 'failed'
        WHEN lo.type = 'provision' AND lo.state = 'in progress' THEN 'provisioning'
        WHEN lo.type = 'deprovision' AND lo.state = 'in progress' THEN 'deprovisioning'
        ELSE 'succeeded'
    END,
    shoot_name = coalesce((SELECT o.data ->> 'shootName' FROM operations o
        WHERE o.instance_id = i.instance_id AND o.type = 'provision'
        ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1), '')
FROM instances i2
LEFT JOIN LATERAL (SELECT o.type, o.state FROM operations o WHERE o.instance_id = i2.instance_id
    ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) lo ON true
WHERE i2.instance_id = i.instance_id;

-- The listing pages in (created_at, instance_id) order; each filter an
-- operator uses alone gets an index leading with it and ending in that order,
-- so a filtered page is an index range scan stopped after one page.
CREATE INDEX instances_state_created_idx ON instances (state, created_at, instance_id);
CREATE INDEX instances_plan_created_idx ON instances (plan_name, created_at, instance_id);
CREATE INDEX instances_region_created_idx ON instances (provider_region, created_at, instance_id);
CREATE INDEX instances_shoot_idx ON instances (shoot_name) WHERE shoot_name <> '';

-- +goose Down
DROP INDEX instances_shoot_idx;
DROP INDEX instances_region_created_idx;
DROP INDEX instances_plan_created_idx;
DROP INDEX instances_state_created_idx;
ALTER TABLE operations DROP COLUMN temporary;
ALTER TABLE instances DROP COLUMN expired_at;
ALTER TABLE instances DROP COLUMN resolved_parameters;
ALTER TABLE instances DROP COLUMN shoot_name;
ALTER TABLE instances DROP COLUMN state;
