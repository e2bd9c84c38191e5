-- +goose Up
-- Where each cleanup job that reads an event feed stopped: the action time of
-- the last event it handled and the IDs of the events it handled at exactly
-- that time. The next pass asks the feed for events from that time on and
-- skips those IDs, so a restart neither misses an event nor handles one twice.
CREATE TABLE cleanup_watermarks (
    name        text PRIMARY KEY,
    action_time timestamptz NOT NULL,
    event_ids   text[] NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE cleanup_watermarks;
