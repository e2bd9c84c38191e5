package storage

import (
	"context"
	"encoding/json"
	"fmt"
)

// KymaState is what the control-plane watch saw of a runtime's Kyma CR:
// Lifecycle Manager's state for it and its modules (instances.kyma_state,
// kyma_modules).
type KymaState struct {
	RuntimeID string
	// State is the Kyma CR's status.state; "" when the CR is gone or
	// Lifecycle Manager has not reported on it yet (stored as NULL).
	State string
	// Modules is the modules' states as JSON ([{name, state, message?}]);
	// nil when the CR is gone.
	Modules json.RawMessage
	// Version is the resourceVersion of the CR this was read from, when it
	// is a number (0 otherwise): a state read from an older version is never
	// written over one from a newer. A deletion always wins (a runtime's Kyma
	// CR is never created again: a resumed instance gets a new runtime ID).
	Version int64
}

// setKymaStates writes the states of many runtimes in one statement. A row
// is written only when its state or modules differ (another replica's watch
// wrote them already, or nothing changed), and only by a deletion or a state
// newer than the stored one. The rows to write are locked first, in
// instance_id order: every replica's watch records the same runtimes, each in
// the order its informer delivered them, and two such updates locking rows as
// the join meets them deadlock (seen with two replicas; the statement failed
// and was retried).
const setKymaStates = `WITH v AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::bigint[]) AS v(runtime_id, state, modules, version)
), locked AS (
	SELECT i.instance_id FROM instances i JOIN v ON i.runtime_id = v.runtime_id
	WHERE i.runtime_id <> ''
		AND (v.modules IS NULL OR i.kyma_state_version IS NULL OR v.version = 0 OR i.kyma_state_version < v.version)
		AND (i.kyma_state IS DISTINCT FROM v.state OR i.kyma_modules IS DISTINCT FROM v.modules)
	ORDER BY i.instance_id
	FOR UPDATE OF i
)
UPDATE instances i
SET kyma_state = v.state, kyma_modules = v.modules, kyma_state_version = NULLIF(v.version, 0)
FROM v, locked l
WHERE i.instance_id = l.instance_id AND i.runtime_id = v.runtime_id
	AND (v.modules IS NULL OR i.kyma_state_version IS NULL OR v.version = 0 OR i.kyma_state_version < v.version)
	AND (i.kyma_state IS DISTINCT FROM v.state OR i.kyma_modules IS DISTINCT FROM v.modules)`

// SetKymaStates records the Kyma states of runtimes (each runtime ID at
// most once) and returns how many instances changed. Runtime IDs of no live
// instance are ignored.
func (s *Store) SetKymaStates(ctx context.Context, states []KymaState) (int64, error) {
	if len(states) == 0 {
		return 0, nil
	}
	ids := make([]string, len(states))
	values := make([]*string, len(states))
	modules := make([]*string, len(states))
	versions := make([]int64, len(states))
	for i, st := range states {
		ids[i], versions[i] = st.RuntimeID, st.Version
		if st.State != "" {
			values[i] = &st.State
		}
		if st.Modules != nil {
			m := string(st.Modules)
			modules[i] = &m
		}
	}
	tag, err := s.pool.Exec(ctx, setKymaStates, ids, values, modules, versions)
	if err != nil {
		return 0, fmt.Errorf("recording the Kyma states of %d runtimes: %w", len(states), interpretError(err))
	}
	return tag.RowsAffected(), nil
}
