-- +goose Up
-- The LMS tenants keb created: one per global account (name) and LMS
-- region, shared by all the account's runtimes and never deleted. LMS has
-- no lookup of a tenant by name, so this table is how a provisioning (a
-- re-run after a crash, another replica, another runtime of the account)
-- finds the tenant instead of creating a second one
-- (Store.EnsureLMSTenant), as upstream's lms_tenants table was.
CREATE TABLE lms_tenants (
    name       text        NOT NULL,
    region     text        NOT NULL,
    id         text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, region)
);

-- +goose Down
DROP TABLE lms_tenants;
