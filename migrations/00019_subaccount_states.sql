-- +goose Up
-- The CIS attributes of each subaccount the subaccount sync has seen
-- (internal/subaccountsync): what it wrote on the subaccount's Kyma and
-- Runtime CRs, and the action time of the change it came from, so that an
-- older change, delivered later, never overwrites a newer one.
CREATE TABLE subaccount_states (
    subaccount_id       text PRIMARY KEY,
    beta_enabled        boolean NOT NULL,
    used_for_production text NOT NULL,
    changed_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE subaccount_states;
