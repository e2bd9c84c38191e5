-- +goose Up
-- woken_at is set when a watch sees what an operation waits for change. A
-- worker that is about to snooze compares it with the value it started with:
-- a wake that arrived while the step ran is not lost.
ALTER TABLE operations ADD COLUMN woken_at timestamptz;

-- +goose Down
ALTER TABLE operations DROP COLUMN woken_at;
