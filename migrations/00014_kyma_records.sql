-- +goose Up
-- A runtime's Kyma version, its component list and the name of its overrides
-- Secret are keb's own records: the infrastructure manager's Runtime CR has no
-- field for them (its API prunes what it does not know). Written when a
-- provisioning succeeds, changed by updates (a plan change changes the
-- component list) and Kyma upgrades; update and upgrade operations read them
-- from here. GET instance shows the version as parameters.kymaVersion, which
-- used to be kept in resolved_parameters.
ALTER TABLE instances
    ADD COLUMN kyma_version text NOT NULL DEFAULT '',
    ADD COLUMN kyma_components text[] NOT NULL DEFAULT '{}',
    ADD COLUMN kyma_overrides_secret text NOT NULL DEFAULT '';
UPDATE instances SET kyma_version = resolved_parameters->>'kymaVersion',
    resolved_parameters = resolved_parameters - 'kymaVersion'
WHERE resolved_parameters ? 'kymaVersion';
-- The component list and the Secret were in the operation data of the
-- instance's last successful provisioning.
UPDATE instances i SET
    kyma_components = ARRAY(SELECT jsonb_array_elements_text(coalesce(p.data->'components', '[]'))),
    kyma_overrides_secret = coalesce(p.data->>'overridesSecret', '')
FROM (SELECT DISTINCT ON (instance_id) instance_id, data FROM operations
      WHERE type = 'provision' AND state = 'succeeded'
      ORDER BY instance_id, created_at DESC) p
WHERE p.instance_id = i.instance_id;

-- +goose Down
UPDATE instances SET resolved_parameters = resolved_parameters || jsonb_build_object('kymaVersion', kyma_version)
WHERE kyma_version <> '';
ALTER TABLE instances
    DROP COLUMN kyma_version,
    DROP COLUMN kyma_components,
    DROP COLUMN kyma_overrides_secret;
