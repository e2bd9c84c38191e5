-- +goose Up
-- bindings are OSB service bindings: a ServiceAccount, a ClusterRoleBinding
-- and a short-lived token in the instance's runtime, handed out as a
-- kubeconfig. The row is written before the runtime is touched (state
-- 'in progress') and completed after, so a binding whose replica died is
-- found and cleaned up by the prune job.
CREATE TABLE bindings (
    binding_id text PRIMARY KEY,
    -- A binding goes with its instance: archiving (which deletes the
    -- instance row) leaves none behind. The deprovisioning step
    -- remove_bindings has removed them from the runtime before.
    instance_id text NOT NULL REFERENCES instances (instance_id) ON DELETE CASCADE,
    runtime_id text NOT NULL,
    plan_id text NOT NULL,
    -- parameters as the platform sent them ({} when absent): an identical
    -- PUT is told from a different one by them.
    parameters jsonb NOT NULL DEFAULT '{}'::jsonb,
    state text NOT NULL CHECK (state IN ('in progress', 'succeeded', 'failed')),
    description text NOT NULL DEFAULT '',
    -- operation_id names the bind for last_operation; a re-sent PUT of a
    -- binding in progress gets it again.
    operation_id text NOT NULL,
    service_account text NOT NULL,
    -- The kubeconfig holds a bearer token: sealed with AES-GCM like the
    -- SM credentials, bound to the binding ID. Never in plain text.
    encrypted_kubeconfig text,
    expires_at timestamptz NOT NULL,
    -- deadline bounds an in-progress bind; past it the prune job fails it.
    deadline timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bindings_instance_idx ON bindings (instance_id, created_at);
-- The prune job looks for expired and overdue bindings.
CREATE INDEX bindings_expires_idx ON bindings (expires_at);

-- +goose Down
DROP TABLE bindings;
