-- +goose Up
-- An instance is in instances or in instances_archive, never in both: the
-- deprovisioning step "archive" now archives and deletes the instance in one
-- transaction (Store.ArchiveAndRemove), and /info/runtimes reads the archive
-- without leaving out archived instances that are still live. Older versions
-- archived in one step and deleted the instance in a later one
-- (remove_instance), so an instance could be in both tables for a while, or
-- for good if its deprovisioning stopped between the two steps. Such
-- instances are deleted here, with their operations (ON DELETE CASCADE): the
-- state their remove_instance step would have reached. A deprovisioning of
-- one of them that is still queued finds its operation gone and stops, as
-- after remove_instance; last_operation answers a poll of it from the
-- archive. The archive row stays as it is.
DELETE FROM instances i
WHERE EXISTS (SELECT 1 FROM instances_archive a WHERE a.instance_id = i.instance_id);

-- +goose Down
-- Nothing to undo: the deleted instances were deprovisioned and archived,
-- and older versions read the archive rows kept for them as they read those
-- of any instance their remove_instance step removed.
