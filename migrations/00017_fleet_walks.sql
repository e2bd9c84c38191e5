-- +goose Up
-- Where a walk over the fleet (the BTP Manager Secret reconciler) stands:
-- a periodic job's run is bounded by the queue's job timeout, so a pass over
-- thousands of runtimes takes many runs; each continues after the last
-- instance ID the previous one finished (cursor, '' between passes).
-- pass_started_at is when the current pass began, pass_finished_at when the
-- last one ended (a new pass starts once the interval has passed since).
CREATE TABLE fleet_walks (
    name             text PRIMARY KEY,
    cursor           text NOT NULL DEFAULT '',
    pass_started_at  timestamptz,
    pass_finished_at timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE fleet_walks;
