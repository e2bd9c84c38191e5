package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Enqueuer puts an accepted operation on the work queue inside the
// transaction that writes the operation, so that neither exists without the
// other. It runs before the operation's row is written and returns the job's
// ID, which goes into that row (operations.job_id): one statement less than
// linking them afterwards.
type Enqueuer interface {
	EnqueueTx(ctx context.Context, tx pgx.Tx, operationID string) (jobID int64, err error)
	// EnqueueManyTx is EnqueueTx for several operations in one statement;
	// the job IDs come in the order of operationIDs.
	EnqueueManyTx(ctx context.Context, tx pgx.Tx, operationIDs []string) (jobIDs []int64, err error)
}

// Store reads and writes instances and operations.
type Store struct {
	pool     *pgxpool.Pool
	cipher   *Cipher
	enqueuer Enqueuer
	// jobNotify paces River's insert notifications of the jobs the single
	// accept writes itself (acceptjob.go).
	jobNotify jobNotifier
	// accepts groups concurrent CreateProvisioning calls into one
	// transaction (accept.go).
	accepts acceptGroup
}

// NewStore returns a Store over pool. enqueuer may be nil while no engine
// drains the queue; accepted operations then wait in the database.
func NewStore(pool *pgxpool.Pool, cipher *Cipher, enqueuer Enqueuer) *Store {
	return &Store{pool: pool, cipher: cipher, enqueuer: enqueuer}
}

// Pool exposes the pool for health checks and for packages that join the
// store's transactions.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

const instanceColumns = `instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id,
	plan_id, plan_name, one_per_global_account_plan, platform_region, provider, provider_region, parameters, context,
	encrypted_credentials, dashboard_url, cluster_id, state, shoot_name, resolved_parameters, expired_at,
	kyma_state, kyma_modules, kyma_version, kyma_components, kyma_overrides_secret, subscription_global_account_id,
	created_at, updated_at`

const operationColumns = `operation_id, instance_id, type, state, description, stage, finished_stages,
	error_message, deadline, data, temporary, update_request, job_id, woken_at, created_at, updated_at, finished_at`

// instanceRow is an Instance as stored, with credentials still sealed.
type instanceRow struct {
	Instance
	EncryptedCredentials *string `db:"encrypted_credentials"`
}

func (s *Store) open(row instanceRow) (Instance, error) {
	inst := row.Instance
	if row.EncryptedCredentials != nil {
		plain, err := s.cipher.Open(*row.EncryptedCredentials, inst.InstanceID)
		if err != nil {
			return Instance{}, fmt.Errorf("opening credentials of instance %s: %w", inst.InstanceID, err)
		}
		inst.Credentials = plain
	}
	return inst, nil
}

// createProvisioning is the single-accept transaction: a's job, instance
// and operation, nothing else, in one round trip: BEGIN, the instance, the
// operation with its job (acceptjob.go), the deadline guard and COMMIT
// (pipelinedtx.go). The guard, last before the COMMIT, fails the
// transaction when PostgreSQL reaches it within acceptCommitMargin of the
// request's deadline, so that a database that froze with the pipeline in
// hand does not commit, on thawing, an accept keb has answered 503. With an
// enqueuer that cannot describe the job, River's InsertTx writes it first,
// a round trip of its own.
//
// A connection lost on the way runs it again (retryLost): if the first run
// committed, the second finds the instance (ErrAlreadyExists), which the
// broker answers as it answers a re-sent PUT, from the stored instance.
func (s *Store) createProvisioning(ctx context.Context, a *accept) error {
	inst, op := a.inst, a.op
	err := retryLost(ctx, func() error {
		return inPipelinedTx(ctx, s.pool, func(tx *pipelinedTx) error {
			// Each insert still runs with its own snapshot; a failing one makes
			// PostgreSQL skip the COMMIT behind it, and the whole transaction is
			// rolled back. An archived ID writes no instance (the insert's
			// snapshot sees the archive) and fails the operation's insert.
			batch := &pgx.Batch{}
			batch.Queue(insertInstanceSQL,
				inst.InstanceID, inst.RuntimeID, inst.GlobalAccountID, inst.SubAccountID, inst.UserID, inst.ServiceID,
				inst.PlanID, inst.PlanName, inst.OnePerGlobalAccountPlan, inst.PlatformRegion, inst.Provider, inst.ProviderRegion,
				jsonOrEmpty(inst.Parameters), jsonOrEmpty(inst.Context), a.sealed)
			if !s.queueAcceptJob(ctx, batch, op) {
				// The queue's job first, through River: its ID is written
				// with the operation, a round trip later.
				jobID, err := s.enqueue(ctx, tx, op)
				if err != nil {
					return err
				}
				batch.Queue(insertNewInstanceOperationSQL, append(operationArgs(op), jobID)...)
				queueAcceptDeadline(ctx, batch)
			}
			if err := tx.commitWith(ctx, batch); err != nil {
				if acceptDeadlineFailed(err) {
					return errAcceptDeadline
				}
				return fmt.Errorf("writing instance and operation: %w", err)
			}
			return nil
		})
	})
	return interpretError(err)
}

// insertInstanceSQL writes a new instance unless its ID is archived: a
// deprovisioned instance's ID is never reused. No row written means archived
// (archive rows are never deleted), and then the operation's insert behind
// it fails.
const insertInstanceSQL = `INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id,
	user_id, service_id, plan_id, plan_name, one_per_global_account_plan, platform_region, provider, provider_region,
	parameters, context, encrypted_credentials)
	SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text,
		$11::text, $12::text, $13::jsonb, $14::jsonb, $15::text
	WHERE NOT EXISTS (SELECT 1 FROM instances_archive WHERE instance_id = $1)`

// insertNewInstanceOperationSQL writes the new instance's first operation,
// and fails when the instance ID is archived by now. The check is repeated
// after the instance's insert on purpose: a deprovisioning archiving this ID
// may have committed while that insert waited on the old row's lock; this
// statement's fresh snapshot sees it, and the ID stays retired.
//
// It fails rather than writing no row because the COMMIT is pipelined behind
// it: only a failing statement keeps PostgreSQL from running that COMMIT. An
// archived ID gives the operation a NULL instance_id, which its NOT NULL
// constraint refuses (23502, read as ErrArchived by interpretError).
const insertNewInstanceOperationSQL = `INSERT INTO operations (operation_id, instance_id, type, state, description,
	stage, deadline, data, temporary, update_request, job_id)
	SELECT $1::text,
		CASE WHEN EXISTS (SELECT 1 FROM instances_archive WHERE instance_id = $2) THEN NULL ELSE $2::text END,
		$3::text, $4::text, $5::text, $6::text, $7::timestamptz, $8::jsonb, $9::boolean, $10::jsonb, $11::bigint`

// runningOperations reads the instance's operations in progress (at most one,
// by operations_one_active_per_instance) inside tx.
func runningOperations(ctx context.Context, tx pgx.Tx, instanceID string) ([]Operation, error) {
	rows, _ := tx.Query(ctx, `SELECT `+operationColumns+` FROM operations WHERE instance_id = $1 AND state = $2`,
		instanceID, OperationInProgress)
	ops, err := pgx.CollectRows(rows, pgx.RowToStructByName[Operation])
	if err != nil {
		return nil, fmt.Errorf("reading running operations of instance %s: %w", instanceID, err)
	}
	return ops, nil
}

const insertOperationSQL = `INSERT INTO operations (operation_id, instance_id, type, state, description, stage,
	deadline, data, temporary, update_request, job_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

func operationArgs(op Operation) []any {
	return []any{op.ID, op.InstanceID, op.Type, op.State, op.Description, op.Stage, op.Deadline, jsonOrEmpty(op.Data), op.Temporary, op.Request}
}

// insertOperation queues op and writes it, with its job's ID, in tx.
func (s *Store) insertOperation(ctx context.Context, tx pgx.Tx, op Operation) error {
	jobID, err := s.enqueue(ctx, tx, op)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertOperationSQL, append(operationArgs(op), jobID)...); err != nil {
		return fmt.Errorf("inserting operation: %w", interpretError(err))
	}
	return nil
}

// enqueue queues an operation about to be written in tx and returns its job's
// ID; nil (NULL job_id) without an enqueuer.
func (s *Store) enqueue(ctx context.Context, tx pgx.Tx, op Operation) (*int64, error) {
	if s.enqueuer == nil {
		return nil, nil
	}
	id, err := s.enqueuer.EnqueueTx(ctx, tx, op.ID)
	if err != nil {
		return nil, fmt.Errorf("enqueueing operation %s: %w", op.ID, err)
	}
	return &id, nil
}

// Instance returns the live instance with that ID; ErrNotFound when there is
// none (unknown, or deprovisioned and archived).
func (s *Store) Instance(ctx context.Context, instanceID string) (Instance, error) {
	var row instanceRow
	err := retryLost(ctx, func() (err error) {
		rows, _ := s.pool.Query(ctx, `SELECT `+instanceColumns+` FROM instances WHERE instance_id = $1`, instanceID)
		row, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[instanceRow])
		return err
	})
	if err != nil {
		return Instance{}, interpretError(err)
	}
	return s.open(row)
}

// LastOperation returns the newest operation of an instance.
func (s *Store) LastOperation(ctx context.Context, instanceID string) (Operation, error) {
	var op Operation
	err := retryLost(ctx, func() (err error) {
		rows, _ := s.pool.Query(ctx, `SELECT `+operationColumns+` FROM operations
			WHERE instance_id = $1 ORDER BY created_at DESC, operation_id DESC LIMIT 1`, instanceID)
		op, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
		return err
	})
	return op, interpretError(err)
}

// Operation returns one operation of an instance.
func (s *Store) Operation(ctx context.Context, instanceID, operationID string) (Operation, error) {
	var op Operation
	err := retryLost(ctx, func() (err error) {
		rows, _ := s.pool.Query(ctx, `SELECT `+operationColumns+` FROM operations
			WHERE instance_id = $1 AND operation_id = $2`, instanceID, operationID)
		op, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
		return err
	})
	return op, interpretError(err)
}

// haltedByDeprovisioning is what a provisioning stopped by a DELETE says.
const haltedByDeprovisioning = "Provisioning halted: the platform requested deprovisioning"

// CreateDeprovisioning accepts a deprovisioning of an instance in one
// transaction. A deprovisioning already in progress is returned as it is
// (created false), so a re-sent DELETE gets the same operation. A provisioning
// in progress is halted: the engine sees its state change at its next step
// boundary. It returns ErrNotFound for an unknown or archived instance and
// ErrOperationInProgress while an update runs. A connection lost on the way
// runs it again: a first run that committed is then found as the
// deprovisioning in progress.
func (s *Store) CreateDeprovisioning(ctx context.Context, op Operation) (Operation, bool, error) {
	var result Operation
	created := false
	err := retryLost(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			result, created = Operation{}, false
			// The instance row, locked against concurrent changes; ErrNotFound
			// when there is none (unknown or archived).
			var locked int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM instances WHERE instance_id = $1 FOR UPDATE`, op.InstanceID).Scan(&locked); err != nil {
				return interpretError(err)
			}
			active, err := runningOperations(ctx, tx, op.InstanceID)
			if err != nil {
				return err
			}
			for _, a := range active {
				switch {
				case a.Type == OperationTypeDeprovision && !a.Temporary:
					result = a
					return nil
				case a.Type == OperationTypeDeprovision, a.Type == OperationTypeUpdate, a.Type.IsUpgrade():
					// A suspension is not a deprovisioning: the platform
					// retries its DELETE once the suspension ended.
					return ErrOperationInProgress
				case a.Type == OperationTypeProvision:
					if _, err := tx.Exec(ctx, `UPDATE operations SET state = $2, description = $3, error_message = $3,
					updated_at = now(), finished_at = now() WHERE operation_id = $1`,
						a.ID, OperationFailed, haltedByDeprovisioning); err != nil {
						return fmt.Errorf("halting provisioning %s: %w", a.ID, err)
					}
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE instances SET state = $2, updated_at = now() WHERE instance_id = $1`,
				op.InstanceID, RuntimeDeprovisioning); err != nil {
				return fmt.Errorf("marking instance deprovisioning: %w", err)
			}
			if err := s.insertOperation(ctx, tx, op); err != nil {
				return err
			}
			result, created = op, true
			return nil
		})
	})
	if err != nil {
		return Operation{}, false, interpretError(err)
	}
	return result, created, nil
}

// jsonOrNull is b, or SQL NULL when b is empty.
func jsonOrNull(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func jsonOrEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}
