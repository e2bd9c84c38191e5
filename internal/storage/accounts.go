package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AccountUsage counts, per hyperscaler account (pool Secret name), the live
// instances using it: those whose last successful provisioning ran on it
// (resolved_parameters.targetSecret, kept while suspended) and those whose
// provisioning claimed it (the operation's hyperscalerSecret), in one
// statement. Accounts nobody uses are absent.
func (s *Store) AccountUsage(ctx context.Context, names []string) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT name, count(DISTINCT instance_id)::int FROM (
			SELECT resolved_parameters->>'targetSecret' AS name, instance_id FROM instances
			WHERE resolved_parameters->>'targetSecret' = ANY($1::text[])
			UNION ALL
			SELECT o.data->>'hyperscalerSecret', o.instance_id FROM operations o
			JOIN instances i ON i.instance_id = o.instance_id
			WHERE o.type = 'provision' AND o.data->>'hyperscalerSecret' = ANY($1::text[])
		) u GROUP BY name`, names)
	return collectUsage(rows, "counting instances per hyperscaler account")
}

// SharedAccountUsage counts, per shared hyperscaler account, the live
// instances on it, for spreading new trials over the shared pool: those
// provisioned on it (resolved_parameters.targetSecret) and those whose
// provisioning, still running, claimed it. Unlike AccountUsage it leaves out
// failed provisionings, which a balance need not count, and so reads only
// indexes (instances_target_secret_idx and the running operations), however
// many instances the database holds: every trial provisioning asks it.
func (s *Store) SharedAccountUsage(ctx context.Context, names []string) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT name, count(DISTINCT instance_id)::int FROM (
			SELECT resolved_parameters->>'targetSecret' AS name, instance_id FROM instances
			WHERE resolved_parameters->>'targetSecret' = ANY($1::text[])
			UNION ALL
			SELECT data->>'hyperscalerSecret', instance_id FROM operations
			WHERE state = 'in progress' AND type = 'provision' AND data->>'hyperscalerSecret' = ANY($1::text[])
		) u GROUP BY name`, names)
	return collectUsage(rows, "counting instances per shared hyperscaler account")
}

func collectUsage(rows pgx.Rows, what string) (map[string]int, error) {
	usage := map[string]int{}
	var name string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		usage[name] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return usage, nil
}
