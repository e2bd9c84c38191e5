package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The methods in this file serve the engine (internal/process): loading an
// operation, checkpointing its steps and finishing it. Every write to an
// operation is conditional on it still being in progress, so that a halted
// operation (a DELETE arrived) is never overwritten by its old worker.

// Work returns an operation and its instance in one statement (a worker
// reads them at every run).
func (s *Store) Work(ctx context.Context, operationID string) (Operation, Instance, error) {
	var op Operation
	var row instanceRow
	dest := append(columnFields(&op, operationColumns), columnFields(&row, instanceColumns)...)
	err := s.pool.QueryRow(ctx, `SELECT `+qualified("o", operationColumns)+`, `+qualified("i", instanceColumns)+`
		FROM operations o JOIN instances i ON i.instance_id = o.instance_id WHERE o.operation_id = $1`, operationID).Scan(dest...)
	if err != nil {
		return Operation{}, Instance{}, interpretError(err)
	}
	inst, err := s.open(row)
	if err != nil {
		return Operation{}, Instance{}, err
	}
	return op, inst, nil
}

// qualified prefixes every column of a column list with table.
func qualified(table, columns string) string {
	names := columnNames(columns)
	for i, c := range names {
		names[i] = table + "." + c
	}
	return strings.Join(names, ", ")
}

func columnNames(columns string) []string {
	names := strings.Split(columns, ",")
	for i, c := range names {
		names[i] = strings.TrimSpace(c)
	}
	return names
}

// columnFields returns pointers to the fields of the struct dst points to
// that hold columns (a column list), in its order: the scan targets of a row
// that joins two tables whose columns share names, which pgx's by-name
// scanning cannot tell apart. Fields are matched by their db tags, embedded
// structs included; a column without a field is a programming error.
func columnFields(dst any, columns string) []any {
	byTag := map[string]any{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(v.Field(i))
				continue
			}
			if tag, _, _ := strings.Cut(f.Tag.Get("db"), ","); tag != "" && tag != "-" {
				byTag[tag] = v.Field(i).Addr().Interface()
			}
		}
	}
	walk(reflect.ValueOf(dst).Elem())
	names := columnNames(columns)
	out := make([]any, len(names))
	for i, c := range names {
		field, ok := byTag[c]
		if !ok {
			panic(fmt.Sprintf("storage: no field of %T holds column %s", dst, c))
		}
		out[i] = field
	}
	return out
}

// SaveProgress stores an in-progress operation's description, stage,
// checkpoints and data, and returns its current wake time. ok is false when
// the operation is no longer in progress: its worker must stop.
func (s *Store) SaveProgress(ctx context.Context, op Operation) (woken *time.Time, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `UPDATE operations SET description = $2, stage = $3, finished_stages = $4,
		data = $5, updated_at = now() WHERE operation_id = $1 AND state = $6 RETURNING woken_at`,
		op.ID, op.Description, op.Stage, op.FinishedStages, jsonOrEmpty(op.Data), OperationInProgress).Scan(&woken)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("saving progress of operation %s: %w", op.ID, err)
	}
	return woken, true, nil
}

// Finish ends an in-progress operation as succeeded or failed and, in the
// same statement, moves its instance to the state the outcome implies. It
// returns false when the operation had already ended (or is gone).
func (s *Store) Finish(ctx context.Context, op Operation) (bool, error) {
	if op.State == OperationInProgress {
		return false, errors.New("finishing an operation needs a final state")
	}
	tag, err := s.pool.Exec(ctx, `WITH op AS (
			UPDATE operations SET state = $2, description = $3, error_message = $4,
				stage = $5, finished_stages = $6, data = $7, updated_at = now(), finished_at = now()
			WHERE operation_id = $1 AND state = $8
			RETURNING instance_id, type, state, temporary)
		UPDATE instances i SET updated_at = now(), state = CASE
				-- A failed credential push or upgrade leaves a working
				-- runtime: its state stays; the failed operation is in its
				-- history.
				WHEN op.type IN ('update', 'upgrade_kyma', 'upgrade_cluster') THEN i.state
				WHEN op.state = 'failed' THEN 'failed'
				WHEN op.type = 'deprovision' AND op.temporary THEN 'suspended'
				WHEN op.type = 'deprovision' THEN 'deprovisioned'
				ELSE 'succeeded'
			END
		FROM op WHERE i.instance_id = op.instance_id`,
		op.ID, op.State, op.Description, op.ErrorMessage, op.Stage, op.FinishedStages, jsonOrEmpty(op.Data), OperationInProgress)
	if err != nil {
		return false, fmt.Errorf("finishing operation %s: %w", op.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// RuntimeIdentity names an instance's runtime: the runtime ID (the Runtime
// CR's name), the cluster ID BTP Manager knows it by, and the shoot name.
type RuntimeIdentity struct {
	RuntimeID string
	ClusterID string
	ShootName string
}

// SetRuntimeIdentity records the runtime identity of an instance the first
// time one is chosen and returns the one stored, so that a step run twice
// after a crash keeps the first choice. The shoot name goes with the runtime
// ID; the cluster ID outlives both (a resumed instance keeps it).
func (s *Store) SetRuntimeIdentity(ctx context.Context, instanceID string, proposed RuntimeIdentity) (RuntimeIdentity, error) {
	var id RuntimeIdentity
	err := s.pool.QueryRow(ctx, `UPDATE instances SET
			shoot_name = CASE WHEN runtime_id = '' THEN $4 ELSE shoot_name END,
			runtime_id = CASE WHEN runtime_id = '' THEN $2 ELSE runtime_id END,
			cluster_id = CASE WHEN cluster_id = '' THEN $3 ELSE cluster_id END,
			updated_at = now()
		WHERE instance_id = $1 RETURNING runtime_id, cluster_id, shoot_name`,
		instanceID, proposed.RuntimeID, proposed.ClusterID, proposed.ShootName).Scan(&id.RuntimeID, &id.ClusterID, &id.ShootName)
	if err != nil {
		return RuntimeIdentity{}, fmt.Errorf("recording runtime of instance %s: %w", instanceID, interpretError(err))
	}
	return id, nil
}

// Provisioned is what a successful provisioning produced.
type Provisioned struct {
	ProviderRegion string
	DashboardURL   string
	// Parameters are the resolved values the runtime was built with.
	Parameters json.RawMessage
	// MaintenanceWindowBegin and End are the runtime's maintenance window
	// ("HH:MM:SS", UTC), which orchestrations with the maintenanceWindow
	// schedule upgrade it in.
	MaintenanceWindowBegin, MaintenanceWindowEnd string
	// Kyma is what the runtime was given of Kyma.
	Kyma KymaRecord
}

// SetProvisioned records what a successful provisioning produced.
func (s *Store) SetProvisioned(ctx context.Context, instanceID string, p Provisioned) error {
	_, err := s.pool.Exec(ctx, `UPDATE instances SET provider_region = $2, dashboard_url = $3,
		resolved_parameters = $4, maintenance_window_begin = $5, maintenance_window_end = $6,
		kyma_version = $7, kyma_components = $8, kyma_overrides_secret = $9,
		updated_at = now() WHERE instance_id = $1`,
		instanceID, p.ProviderRegion, p.DashboardURL, jsonOrEmpty(p.Parameters), p.MaintenanceWindowBegin, p.MaintenanceWindowEnd,
		p.Kyma.KymaVersion, nonNil(p.Kyma.KymaComponents), p.Kyma.OverridesSecret)
	if err != nil {
		return fmt.Errorf("recording provisioned instance %s: %w", instanceID, err)
	}
	return nil
}

// MergeResolvedParameters overlays patch (a JSON object) on an instance's
// resolved parameters, and replaces its Kyma record when kyma is not nil:
// an upgrade records the versions it applied.
func (s *Store) MergeResolvedParameters(ctx context.Context, instanceID string, patch json.RawMessage, kyma *KymaRecord) error {
	var version, secret *string
	var components []string
	if kyma != nil {
		version, components, secret = &kyma.KymaVersion, nonNil(kyma.KymaComponents), &kyma.OverridesSecret
	}
	_, err := s.pool.Exec(ctx, `UPDATE instances SET resolved_parameters = resolved_parameters || $2::jsonb,
		kyma_version = coalesce($3, kyma_version), kyma_components = coalesce($4, kyma_components),
		kyma_overrides_secret = coalesce($5, kyma_overrides_secret),
		updated_at = now() WHERE instance_id = $1`, instanceID, jsonOrEmpty(patch), version, components, secret)
	if err != nil {
		return fmt.Errorf("recording the upgrade of instance %s: %w", instanceID, err)
	}
	return nil
}

// LastOperationOfType returns the newest operation of a type of an instance.
func (s *Store) LastOperationOfType(ctx context.Context, instanceID string, opType OperationType) (Operation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+operationColumns+` FROM operations
		WHERE instance_id = $1 AND type = $2 ORDER BY created_at DESC, operation_id DESC LIMIT 1`, instanceID, opType)
	op, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
	return op, interpretError(err)
}

// OtherInstancesOfTenant counts the global account's other instances on a
// provider, leaving out plans that run on shared accounts: a dedicated
// hyperscaler account is released only when no instance needing it is left.
func (s *Store) OtherInstancesOfTenant(ctx context.Context, globalAccountID, provider, exceptInstanceID string, sharedPlanIDs []string) (int, error) {
	var n int
	// The tenant is the global account an instance was created in, also
	// after its subaccount moved (Instance.PoolTenant).
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM instances
		WHERE coalesce(nullif(subscription_global_account_id, ''), global_account_id) = $1 AND provider = $2
		AND instance_id <> $3 AND NOT (plan_id = ANY(coalesce($4::text[], '{}')))`,
		globalAccountID, provider, exceptInstanceID, sharedPlanIDs).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting instances of global account %s: %w", globalAccountID, err)
	}
	return n, nil
}

// ArchiveAndRemove ends a deprovisioned instance in one transaction: it
// keeps the instance's summary in instances_archive and deletes its
// instances row, whose operations go with it (ON DELETE CASCADE), the
// running deprovisioning included. An instance is therefore in instances or
// in instances_archive, never in both, and never in neither: the listing
// (/info/runtimes) reads each table for its own rows without excluding the
// other's. The deprovisioning's worker learns that its operation is gone
// from its next save (SaveProgress answers not in progress) and stops;
// last_operation answers a poll of it from the archive. Idempotent: an
// instance already archived keeps its first archive row (ON CONFLICT DO
// NOTHING), and one already gone is not an error.
//
// The archive row also keeps the instance's operations (ArchivedOperation),
// read by the same statement that writes the row, before the delete: the
// newest MaxArchivedOperations, and how many older ones were left out. The
// running deprovisioning is kept as it ends (succeeded, with
// DeprovisioningDescription): its own final save never happens.
func (s *Store) ArchiveAndRemove(ctx context.Context, a ArchivedInstance) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, archiveSQL,
			a.InstanceID, a.RuntimeID, a.GlobalAccountID, a.SubAccountID, a.PlanID, a.PlanName, a.PlatformRegion,
			a.Provider, a.ProviderRegion, a.ShootName, a.ProvisioningState, a.LastDeprovisioningID,
			a.InstanceCreatedAt, a.DeprovisioningStartedAt, a.DeprovisioningDescription, jsonOrNull(a.Leftovers),
			MaxArchivedOperations, maxArchivedText, OperationSucceeded); err != nil {
			return fmt.Errorf("archiving instance %s: %w", a.InstanceID, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM instances WHERE instance_id = $1`, a.InstanceID); err != nil {
			return fmt.Errorf("removing instance %s: %w", a.InstanceID, err)
		}
		return nil
	})
}

// MaxArchivedOperations bounds the operations an archive row keeps: an
// instance updated every day for years must not make its archive row (read
// whole by the console) grow without end.
const MaxArchivedOperations = 100

// maxArchivedText bounds each kept description and error, in characters: a
// step's error can quote a whole answer of a remote API.
const maxArchivedText = 2000

// archiveSQL writes an instance's archive row with its operations. The
// operations are those still in the operations table in this transaction;
// on a retry after the row was written, ON CONFLICT keeps the first row,
// whose operations were read before they were deleted.
const archiveSQL = `WITH newest AS (
		SELECT operation_id, type, state, temporary, description, error_message, created_at, updated_at
		FROM operations WHERE instance_id = $1 ORDER BY created_at DESC, operation_id DESC LIMIT $17)
	INSERT INTO instances_archive (instance_id, runtime_id, global_account_id,
		subaccount_id, plan_id, plan_name, platform_region, provider, provider_region, shoot_name,
		provisioning_state, last_deprovisioning_id, instance_created_at, deprovisioning_started_at,
		deprovisioning_description, leftovers, operations, operations_left_out)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
		(SELECT coalesce(jsonb_agg(jsonb_build_object(
			'id', operation_id, 'type', type,
			'state', CASE WHEN operation_id = $12 THEN $19 ELSE state END,
			'temporary', temporary,
			'description', left(CASE WHEN operation_id = $12 THEN $15 ELSE description END, $18),
			'error', left(CASE WHEN operation_id = $12 THEN '' ELSE error_message END, $18),
			'created_at', created_at, 'updated_at', updated_at) ORDER BY created_at, operation_id), '[]'::jsonb)
			FROM newest),
		greatest((SELECT count(*) FROM operations WHERE instance_id = $1) - $17, 0))
	ON CONFLICT (instance_id) DO NOTHING`

// Archived returns the archive entry of a deprovisioned instance.
func (s *Store) Archived(ctx context.Context, instanceID string) (ArchivedInstance, error) {
	rows, _ := s.pool.Query(ctx, `SELECT instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, shoot_name, provisioning_state,
		last_deprovisioning_id, instance_created_at, deprovisioning_started_at, archived_at,
		deprovisioning_description, leftovers
		FROM instances_archive WHERE instance_id = $1`, instanceID)
	a, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ArchivedInstance])
	return a, interpretError(err)
}

// ArchivedOperations returns what the archive keeps of a deprovisioned
// instance's operations, oldest first. Kept is false for an instance
// archived by a keb that did not keep them yet (the summary row is all
// there is); ErrNotFound when the instance is not archived.
func (s *Store) ArchivedOperations(ctx context.Context, instanceID string) (ArchivedHistory, error) {
	var (
		raw []byte
		h   ArchivedHistory
	)
	err := s.pool.QueryRow(ctx, `SELECT operations, operations_left_out FROM instances_archive WHERE instance_id = $1`,
		instanceID).Scan(&raw, &h.LeftOut)
	if err != nil {
		return ArchivedHistory{}, interpretError(err)
	}
	if raw == nil {
		return ArchivedHistory{}, nil
	}
	h.Kept = true
	if err := json.Unmarshal(raw, &h.Operations); err != nil {
		return ArchivedHistory{}, fmt.Errorf("decoding the archived operations of instance %s: %w", instanceID, err)
	}
	return h, nil
}

// WakeRuntime marks the in-progress operation of the instance running
// runtimeID as woken and returns its River job and the database's time of
// the mark, for wake-ups.
func (s *Store) WakeRuntime(ctx context.Context, runtimeID string) (jobID int64, wokenAt time.Time, err error) {
	var id *int64
	err = s.pool.QueryRow(ctx, `UPDATE operations o SET woken_at = clock_timestamp() FROM instances i
		WHERE o.instance_id = i.instance_id AND i.runtime_id = $1 AND o.state = $2 AND o.job_id IS NOT NULL
		RETURNING o.job_id, o.woken_at`, runtimeID, OperationInProgress).Scan(&id, &wokenAt)
	if err != nil {
		return 0, time.Time{}, interpretError(err)
	}
	if id == nil {
		return 0, time.Time{}, ErrNotFound
	}
	return *id, wokenAt, nil
}

// LockInstance takes a session-level advisory lock on an instance on a
// dedicated connection. The lock is released by unlock, or by PostgreSQL when
// the connection dies with its process: a killed replica never keeps it.
func (s *Store) LockInstance(ctx context.Context, instanceID string) (func(), bool, error) {
	unlock, ok, err := s.lock(ctx, `SELECT pg_try_advisory_lock(`+instanceLockKey("$1")+`), $1::text`, instanceID)
	if err != nil {
		return nil, false, fmt.Errorf("locking instance %s: %w", instanceID, err)
	}
	return unlock, ok, nil
}

// LockOperation takes LockInstance's lock on the instance of an operation in
// progress, in one statement: a worker needs no read to learn the instance
// first. ErrNotFound means the operation is gone or no longer in progress.
func (s *Store) LockOperation(ctx context.Context, operationID string) (func(), bool, error) {
	unlock, ok, err := s.lock(ctx, `SELECT pg_try_advisory_lock(`+instanceLockKey("instance_id")+`), instance_id
		FROM operations WHERE operation_id = $1 AND state = $2`, operationID, OperationInProgress)
	if err != nil {
		return nil, false, fmt.Errorf("locking the instance of operation %s: %w", operationID, interpretError(err))
	}
	return unlock, ok, nil
}

// lock runs query, which tries the instance lock and returns whether it got
// it and the instance ID, on a dedicated connection, and returns the unlock.
func (s *Store) lock(ctx context.Context, query string, args ...any) (func(), bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("acquiring connection for instance lock: %w", err)
	}
	var ok bool
	var instanceID string
	if err := conn.QueryRow(ctx, query, args...).Scan(&ok, &instanceID); err != nil {
		conn.Release()
		return nil, false, err
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		// A fresh context: the work's context may be cancelled by now, and
		// an unreleased lock would block the instance until the connection
		// is recycled.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(`+instanceLockKey("$1")+`)`, instanceID); err != nil {
			// Closing the connection releases the lock for sure.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, true, nil
}

// instanceLockKey is the SQL of the advisory lock key of the instance ID
// expr: one home, shared by LockInstance and TakeOverOrphans.
func instanceLockKey(expr string) string { return "hashtextextended(" + expr + ", 0)" }

// TakeOverOrphans makes the queue jobs of operations whose worker died
// available again, and returns their operation IDs. A job counts as orphaned
// when the queue has shown it running for longer than after while nobody
// holds its instance's lock: a live worker takes that lock right after it
// picks the job up and keeps it for the whole run, and PostgreSQL drops it
// with the connection of a killed replica. Another worker therefore never
// runs a step while the first still does; at worst it finds the lock taken
// and waits. This replaces River's rescue (minutes) by seconds.
func (s *Store) TakeOverOrphans(ctx context.Context, after time.Duration) ([]string, error) {
	rows, err := s.pool.Query(ctx, `UPDATE river_job j SET state = 'available', scheduled_at = now()
		FROM operations o
		WHERE o.job_id = j.id AND j.state = 'running'
		  AND j.attempted_at < now() - make_interval(secs => $1)
		  AND NOT EXISTS (
			SELECT 1 FROM pg_locks l
			WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND ((l.classid::bigint << 32) | l.objid::bigint) = `+instanceLockKey("o.instance_id")+`)
		RETURNING o.operation_id`, after.Seconds())
	if err != nil {
		return nil, fmt.Errorf("taking over orphaned operations: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("taking over orphaned operations: %w", err)
	}
	// An orchestration's scheduler runs one short transaction per job run
	// and holds no lock outside it: a job shown running for longer than
	// after lost its replica. Were it alive after all, the two runs would
	// queue on the orchestration's row lock.
	rows, err = s.pool.Query(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE kind = 'keb_orchestration' AND state = 'running' AND attempted_at < now() - make_interval(secs => $1)
		RETURNING 'orchestration ' || (args ->> 'orchestration_id')`, after.Seconds())
	if err != nil {
		return nil, fmt.Errorf("taking over orphaned orchestrations: %w", err)
	}
	orchestrations, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("taking over orphaned orchestrations: %w", err)
	}
	return append(ids, orchestrations...), nil
}

// nonNil stores a nil list as an empty one: the column is NOT NULL.
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// RunningInstances returns up to limit instances whose runtime is running
// (state succeeded, a runtime ID recorded), in instance ID order after
// after, with their credentials opened: a walk of the fleet (the BTP Manager
// Secret reconciler) reads it page by page, one indexed range each.
func (s *Store) RunningInstances(ctx context.Context, after string, limit int) ([]Instance, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+instanceColumns+` FROM instances
		WHERE instance_id > $1 AND state = $2 AND runtime_id <> ''
		ORDER BY instance_id LIMIT $3`, after, RuntimeSucceeded, limit)
	raw, err := pgx.CollectRows(rows, pgx.RowToStructByName[instanceRow])
	if err != nil {
		return nil, fmt.Errorf("listing running instances: %w", err)
	}
	out := make([]Instance, 0, len(raw))
	for _, r := range raw {
		inst, err := s.open(r)
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

// ArchivedWithLeftovers returns up to limit archived instances whose
// deprovisioning left something behind, the longest archived first.
func (s *Store) ArchivedWithLeftovers(ctx context.Context, limit int) ([]ArchivedInstance, error) {
	rows, _ := s.pool.Query(ctx, `SELECT instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, shoot_name, provisioning_state,
		last_deprovisioning_id, instance_created_at, deprovisioning_started_at, archived_at,
		deprovisioning_description, leftovers
		FROM instances_archive WHERE leftovers IS NOT NULL ORDER BY archived_at, instance_id LIMIT $1`, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[ArchivedInstance])
	if err != nil {
		return nil, fmt.Errorf("listing archived instances with leftovers: %w", err)
	}
	return out, nil
}

// SetLeftovers replaces what an archived instance's deprovisioning left
// behind; nil or empty: nothing is left.
func (s *Store) SetLeftovers(ctx context.Context, instanceID string, leftovers json.RawMessage) error {
	if _, err := s.pool.Exec(ctx, `UPDATE instances_archive SET leftovers = $2 WHERE instance_id = $1`,
		instanceID, jsonOrNull(leftovers)); err != nil {
		return fmt.Errorf("recording the leftovers of instance %s: %w", instanceID, err)
	}
	return nil
}
