-- EXPLAIN ANALYZE of the /info/runtimes statements (no filter: page and count; account filter: page),
-- as internal/storage/runtimes.go builds them. psql "$APP_DATABASE_URL" -f testing/runtimesload/explain.sql
\echo '== page, no filter'
EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM (SELECT * FROM (SELECT i.instance_id, i.runtime_id, i.global_account_id, i.subaccount_id, i.user_id,
	i.service_id, i.plan_id, i.plan_name, i.platform_region, i.provider, i.provider_region,
	coalesce(p.data ->> 'shootName', '') AS shoot_name, i.parameters,
	CASE
		WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' THEN 'deprovisioned'
		WHEN lo.state = 'failed' THEN 'failed'
		WHEN lo.type = 'provision' AND lo.state = 'in progress' THEN 'provisioning'
		WHEN lo.type = 'deprovision' AND lo.state = 'in progress' THEN 'deprovisioning'
		ELSE 'succeeded'
	END AS state,
	i.created_at, i.updated_at, i.deleted_at,
	p.operation_id AS p_operation_id, p.state AS p_state, p.description AS p_description,
	p.finished_stages AS p_finished_stages, p.error_message AS p_error_message,
	p.created_at AS p_created_at, p.updated_at AS p_updated_at,
	d.operation_id AS d_operation_id, d.state AS d_state, d.description AS d_description,
	d.finished_stages AS d_finished_stages, d.error_message AS d_error_message,
	d.created_at AS d_created_at, d.updated_at AS d_updated_at
FROM instances i
LEFT JOIN LATERAL (SELECT o.type, o.state FROM operations o WHERE o.instance_id = i.instance_id
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) lo ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at, o.data FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'provision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'deprovision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) d ON true) live WHERE state = ANY('{provisioning,succeeded,failed,deprovisioning,suspended}'::text[])) r ORDER BY created_at, instance_id LIMIT 101;
\echo '== count, no filter'
EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM (SELECT * FROM (SELECT i.instance_id, i.runtime_id, i.global_account_id, i.subaccount_id, i.user_id,
	i.service_id, i.plan_id, i.plan_name, i.platform_region, i.provider, i.provider_region,
	coalesce(p.data ->> 'shootName', '') AS shoot_name, i.parameters,
	CASE
		WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' THEN 'deprovisioned'
		WHEN lo.state = 'failed' THEN 'failed'
		WHEN lo.type = 'provision' AND lo.state = 'in progress' THEN 'provisioning'
		WHEN lo.type = 'deprovision' AND lo.state = 'in progress' THEN 'deprovisioning'
		ELSE 'succeeded'
	END AS state,
	i.created_at, i.updated_at, i.deleted_at,
	p.operation_id AS p_operation_id, p.state AS p_state, p.description AS p_description,
	p.finished_stages AS p_finished_stages, p.error_message AS p_error_message,
	p.created_at AS p_created_at, p.updated_at AS p_updated_at,
	d.operation_id AS d_operation_id, d.state AS d_state, d.description AS d_description,
	d.finished_stages AS d_finished_stages, d.error_message AS d_error_message,
	d.created_at AS d_created_at, d.updated_at AS d_updated_at
FROM instances i
LEFT JOIN LATERAL (SELECT o.type, o.state FROM operations o WHERE o.instance_id = i.instance_id
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) lo ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at, o.data FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'provision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'deprovision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) d ON true) live WHERE state = ANY('{provisioning,succeeded,failed,deprovisioning,suspended}'::text[])) r;
\echo '== page, account=rtload-ga-007'
EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM (SELECT * FROM (SELECT i.instance_id, i.runtime_id, i.global_account_id, i.subaccount_id, i.user_id,
	i.service_id, i.plan_id, i.plan_name, i.platform_region, i.provider, i.provider_region,
	coalesce(p.data ->> 'shootName', '') AS shoot_name, i.parameters,
	CASE
		WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' THEN 'deprovisioned'
		WHEN lo.state = 'failed' THEN 'failed'
		WHEN lo.type = 'provision' AND lo.state = 'in progress' THEN 'provisioning'
		WHEN lo.type = 'deprovision' AND lo.state = 'in progress' THEN 'deprovisioning'
		ELSE 'succeeded'
	END AS state,
	i.created_at, i.updated_at, i.deleted_at,
	p.operation_id AS p_operation_id, p.state AS p_state, p.description AS p_description,
	p.finished_stages AS p_finished_stages, p.error_message AS p_error_message,
	p.created_at AS p_created_at, p.updated_at AS p_updated_at,
	d.operation_id AS d_operation_id, d.state AS d_state, d.description AS d_description,
	d.finished_stages AS d_finished_stages, d.error_message AS d_error_message,
	d.created_at AS d_created_at, d.updated_at AS d_updated_at
FROM instances i
LEFT JOIN LATERAL (SELECT o.type, o.state FROM operations o WHERE o.instance_id = i.instance_id
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) lo ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at, o.data FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'provision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'deprovision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) d ON true
WHERE i.global_account_id = ANY('{rtload-ga-007}'::text[])) live WHERE state = ANY('{provisioning,succeeded,failed,deprovisioning,suspended}'::text[])) r ORDER BY created_at, instance_id LIMIT 101;
