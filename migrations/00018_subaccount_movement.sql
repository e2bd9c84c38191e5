-- +goose Up
-- A subaccount moved to another global account (a PATCH with a new
-- globalaccount_id, APP_SUBACCOUNT_MOVEMENT_ENABLED): global_account_id
-- becomes the new one (labels, listings, the blocklist), and the account the
-- instance was created in is kept here for the hyperscaler account pool,
-- whose claim is that account's. '' : never moved.
ALTER TABLE instances ADD COLUMN subscription_global_account_id text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE instances DROP COLUMN subscription_global_account_id;
