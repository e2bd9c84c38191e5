package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Runtime states as operators see them (KEB's words, not OSB's).
const (
	RuntimeProvisioning   = "provisioning"
	RuntimeSucceeded      = "succeeded"
	RuntimeFailed         = "failed"
	RuntimeDeprovisioning = "deprovisioning"
	RuntimeDeprovisioned  = "deprovisioned"
	// RuntimeSuspended is reserved for suspended trials; no instance is in
	// it until suspension exists, but filtering on it is already valid.
	RuntimeSuspended = "suspended"
)

// RuntimeStates are every state a runtime can be filtered on.
var RuntimeStates = []string{RuntimeProvisioning, RuntimeSucceeded, RuntimeFailed, RuntimeDeprovisioning,
	RuntimeDeprovisioned, RuntimeSuspended}

// DefaultRuntimeStates is what a query without a state filter matches: every
// state but deprovisioned, because archived instances are history that an
// operator asks for on purpose.
var DefaultRuntimeStates = []string{RuntimeProvisioning, RuntimeSucceeded, RuntimeFailed, RuntimeDeprovisioning,
	RuntimeSuspended}

// RuntimeQuery selects a page of runtimes. Each filter slice is an OR of its
// values; the filters are ANDed. An empty slice does not filter.
type RuntimeQuery struct {
	GlobalAccountIDs []string
	SubAccountIDs    []string
	InstanceIDs      []string
	RuntimeIDs       []string
	Regions          []string // provider regions
	Plans            []string // plan names
	Shoots           []string
	// States are runtime states (see RuntimeStates); empty means
	// DefaultRuntimeStates.
	States []string
	// Page is 1-based; ignored when After is set.
	Page     int
	PageSize int
	// After is the keyset cursor: only runtimes ordered after it are read.
	After *RuntimeCursor
	// AllOperations also loads every operation of the page's instances.
	AllOperations bool
}

// RuntimeCursor is the position of a runtime in the listing order.
type RuntimeCursor struct {
	CreatedAt  time.Time
	InstanceID string
}

// RuntimeOperation is an operation as a runtime listing shows it.
type RuntimeOperation struct {
	ID             string    `db:"operation_id"`
	InstanceID     string    `db:"instance_id"`
	Type           string    `db:"type"`
	State          string    `db:"state"`
	Description    string    `db:"description"`
	FinishedStages []string  `db:"finished_stages"`
	ErrorMessage   string    `db:"error_message"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// Runtime is one row of the runtime listing: a live instance with its newest
// provisioning and deprovisioning, or an archived one.
type Runtime struct {
	InstanceID      string
	RuntimeID       string
	GlobalAccountID string
	SubAccountID    string
	UserID          string
	ServiceID       string
	PlanID          string
	PlanName        string
	PlatformRegion  string
	Provider        string
	ProviderRegion  string
	ShootName       string
	Parameters      json.RawMessage
	State           string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	DeletedAt       *time.Time
	Provisioning    *RuntimeOperation
	Deprovisioning  *RuntimeOperation
	// Operations are all operations, newest first; filled only when the
	// query asked for them.
	Operations []RuntimeOperation
}

// Cursor is the keyset position of r.
func (r Runtime) Cursor() RuntimeCursor {
	return RuntimeCursor{CreatedAt: r.CreatedAt, InstanceID: r.InstanceID}
}

// RuntimePage is one page of the listing.
type RuntimePage struct {
	Runtimes []Runtime
	// Total counts every runtime matching the filters, on all pages.
	Total int
	// Next is where the following page starts; nil on the last page.
	Next *RuntimeCursor
}

// runtimeRow is a page row as the page statement returns it; the operation
// columns are NULL when the instance has no such operation.
type runtimeRow struct {
	InstanceID      string          `db:"instance_id"`
	RuntimeID       string          `db:"runtime_id"`
	GlobalAccountID string          `db:"global_account_id"`
	SubAccountID    string          `db:"subaccount_id"`
	UserID          string          `db:"user_id"`
	ServiceID       string          `db:"service_id"`
	PlanID          string          `db:"plan_id"`
	PlanName        string          `db:"plan_name"`
	PlatformRegion  string          `db:"platform_region"`
	Provider        string          `db:"provider"`
	ProviderRegion  string          `db:"provider_region"`
	ShootName       string          `db:"shoot_name"`
	Parameters      json.RawMessage `db:"parameters"`
	State           string          `db:"state"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
	DeletedAt       *time.Time      `db:"deleted_at"`

	POperationID    *string    `db:"p_operation_id"`
	PState          *string    `db:"p_state"`
	PDescription    *string    `db:"p_description"`
	PFinishedStages []string   `db:"p_finished_stages"`
	PErrorMessage   *string    `db:"p_error_message"`
	PCreatedAt      *time.Time `db:"p_created_at"`
	PUpdatedAt      *time.Time `db:"p_updated_at"`

	DOperationID    *string    `db:"d_operation_id"`
	DState          *string    `db:"d_state"`
	DDescription    *string    `db:"d_description"`
	DFinishedStages []string   `db:"d_finished_stages"`
	DErrorMessage   *string    `db:"d_error_message"`
	DCreatedAt      *time.Time `db:"d_created_at"`
	DUpdatedAt      *time.Time `db:"d_updated_at"`
}

func rowOperation(instanceID, typ string, id, state, desc, errMsg *string, stages []string, created, updated *time.Time) *RuntimeOperation {
	if id == nil {
		return nil
	}
	op := &RuntimeOperation{ID: *id, InstanceID: instanceID, Type: typ, FinishedStages: stages,
		State: deref(state), Description: deref(desc), ErrorMessage: deref(errMsg)}
	if stages == nil {
		op.FinishedStages = []string{}
	}
	if created != nil {
		op.CreatedAt = *created
	}
	if updated != nil {
		op.UpdatedAt = *updated
	}
	return op
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (r runtimeRow) runtime() Runtime {
	return Runtime{
		InstanceID: r.InstanceID, RuntimeID: r.RuntimeID, GlobalAccountID: r.GlobalAccountID,
		SubAccountID: r.SubAccountID, UserID: r.UserID, ServiceID: r.ServiceID, PlanID: r.PlanID,
		PlanName: r.PlanName, PlatformRegion: r.PlatformRegion, Provider: r.Provider,
		ProviderRegion: r.ProviderRegion, ShootName: r.ShootName, Parameters: r.Parameters, State: r.State,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, DeletedAt: r.DeletedAt,
		Provisioning: rowOperation(r.InstanceID, OperationTypeProvision, r.POperationID, r.PState, r.PDescription,
			r.PErrorMessage, r.PFinishedStages, r.PCreatedAt, r.PUpdatedAt),
		Deprovisioning: rowOperation(r.InstanceID, OperationTypeDeprovision, r.DOperationID, r.DState, r.DDescription,
			r.DErrorMessage, r.DFinishedStages, r.DCreatedAt, r.DUpdatedAt),
	}
}

// liveRuntimes reads live instances with their newest operation (which decides
// the state), newest provisioning (which holds the shoot name) and newest
// deprovisioning. Each LATERAL is one probe of
// operations_instance_created_idx, so the cost grows with the page, not with
// the table.
const liveRuntimes = `SELECT i.instance_id, i.runtime_id, i.global_account_id, i.subaccount_id, i.user_id,
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
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) d ON true`

// archivedRuntimes reads the archive. An instance whose deprovisioning is
// still running is in both tables; it is shown once, from instances, until
// its row is removed.
const archivedRuntimes = `SELECT a.instance_id, a.runtime_id, a.global_account_id, a.subaccount_id, '' AS user_id,
	'' AS service_id, a.plan_id, a.plan_name, a.platform_region, a.provider, a.provider_region,
	a.shoot_name, '{}'::jsonb AS parameters, 'deprovisioned' AS state,
	a.instance_created_at AS created_at, a.archived_at AS updated_at, a.archived_at AS deleted_at,
	NULL::text AS p_operation_id, NULL::text AS p_state, NULL::text AS p_description,
	NULL::text[] AS p_finished_stages, NULL::text AS p_error_message,
	NULL::timestamptz AS p_created_at, NULL::timestamptz AS p_updated_at,
	a.last_deprovisioning_id AS d_operation_id, 'succeeded'::text AS d_state, ''::text AS d_description,
	'{}'::text[] AS d_finished_stages, ''::text AS d_error_message,
	a.deprovisioning_started_at AS d_created_at, a.archived_at AS d_updated_at
FROM instances_archive a`

// runtimeSQL builds the page statement and the count statement for q. The SQL
// is built per query with only the filters given, rather than one statement
// with "$n IS NULL OR ..." arms, so that the planner sees plain predicates it
// can match to indexes even with a cached generic plan.
type runtimeSQL struct {
	args []any
}

func (b *runtimeSQL) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// where returns the predicates of one branch (live or archive) for q. col maps
// a filter to that branch's expression.
func (b *runtimeSQL) where(q RuntimeQuery, col map[string]string) []string {
	var preds []string
	add := func(key string, values []string) {
		if len(values) > 0 {
			preds = append(preds, col[key]+" = ANY("+b.arg(values)+"::text[])")
		}
	}
	add("account", q.GlobalAccountIDs)
	add("subaccount", q.SubAccountIDs)
	add("instance", q.InstanceIDs)
	add("runtime", q.RuntimeIDs)
	add("region", q.Regions)
	add("plan", q.Plans)
	add("shoot", q.Shoots)
	if q.After != nil {
		preds = append(preds, "("+col["created"]+", "+col["instance"]+") > ("+b.arg(q.After.CreatedAt)+"::timestamptz, "+
			b.arg(q.After.InstanceID)+"::text)")
	}
	return preds
}

func joinWhere(preds []string) string {
	if len(preds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(preds, " AND ")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// RuntimesSQL returns the page statement (LIMIT page_size+1, to know whether a
// next page exists without another statement), the count statement, and
// their arguments. The count ignores the cursor: it is the total of the
// listing, not of what is left. Exported so that tests and
// testing/runtimesload EXPLAIN exactly what Runtimes runs.
func RuntimesSQL(q RuntimeQuery) (page string, pageArgs []any, count string, countArgs []any) {
	states := q.States
	if len(states) == 0 {
		states = DefaultRuntimeStates
	}
	build := func(withCursor bool) (string, []any) {
		qq := q
		if !withCursor {
			qq.After = nil
		}
		b := &runtimeSQL{}
		var branches []string
		// Live instances can be in every state (deprovisioned only between
		// a finished deprovisioning and the removal of the row).
		{
			preds := b.where(qq, map[string]string{
				"account": "i.global_account_id", "subaccount": "i.subaccount_id", "instance": "i.instance_id",
				"runtime": "i.runtime_id", "region": "i.provider_region", "plan": "i.plan_name",
				"shoot": "(p.data ->> 'shootName')", "created": "i.created_at",
			})
			branches = append(branches, "SELECT * FROM ("+liveRuntimes+joinWhere(preds)+
				") live WHERE state = ANY("+b.arg(states)+"::text[])")
		}
		if contains(states, RuntimeDeprovisioned) {
			preds := b.where(qq, map[string]string{
				"account": "a.global_account_id", "subaccount": "a.subaccount_id", "instance": "a.instance_id",
				"runtime": "a.runtime_id", "region": "a.provider_region", "plan": "a.plan_name",
				"shoot": "a.shoot_name", "created": "a.instance_created_at",
			})
			preds = append(preds, "NOT EXISTS (SELECT 1 FROM instances x WHERE x.instance_id = a.instance_id)")
			branches = append(branches, archivedRuntimes+joinWhere(preds))
		}
		return strings.Join(branches, "\nUNION ALL\n"), b.args
	}

	union, args := build(true)
	page = "SELECT * FROM (" + union + ") r ORDER BY created_at, instance_id"
	pageSize := q.PageSize
	if pageSize <= 0 {
		pageSize = 100
	}
	page += " LIMIT " + strconv.Itoa(pageSize+1)
	if q.After == nil && q.Page > 1 {
		page += " OFFSET " + strconv.Itoa((q.Page-1)*pageSize)
	}
	union, countArgs = build(false)
	count = "SELECT count(*) FROM (" + union + ") r"
	return page, args, count, countArgs
}

// Runtimes returns one page of the runtime listing in (created_at,
// instance_id) order. It runs at most three statements whatever the page
// size: the page, the count, and (with AllOperations) the page's operations.
func (s *Store) Runtimes(ctx context.Context, q RuntimeQuery) (RuntimePage, error) {
	pageSQL, pageArgs, countSQL, countArgs := RuntimesSQL(q)
	rows, _ := s.pool.Query(ctx, pageSQL, pageArgs...)
	raw, err := pgx.CollectRows(rows, pgx.RowToStructByName[runtimeRow])
	if err != nil {
		return RuntimePage{}, fmt.Errorf("reading runtimes: %w", err)
	}
	var page RuntimePage
	pageSize := q.PageSize
	if pageSize <= 0 {
		pageSize = 100
	}
	if len(raw) > pageSize {
		raw = raw[:pageSize]
		c := raw[len(raw)-1].runtime().Cursor()
		page.Next = &c
	}
	page.Runtimes = make([]Runtime, 0, len(raw))
	for _, r := range raw {
		page.Runtimes = append(page.Runtimes, r.runtime())
	}
	if err := s.pool.QueryRow(ctx, countSQL, countArgs...).Scan(&page.Total); err != nil {
		return RuntimePage{}, fmt.Errorf("counting runtimes: %w", err)
	}
	if q.AllOperations && len(page.Runtimes) > 0 {
		if err := s.loadRuntimeOperations(ctx, page.Runtimes); err != nil {
			return RuntimePage{}, err
		}
	}
	return page, nil
}

// loadRuntimeOperations fills every runtime's Operations with one statement
// for the whole page.
func (s *Store) loadRuntimeOperations(ctx context.Context, runtimes []Runtime) error {
	ids := make([]string, len(runtimes))
	index := make(map[string]int, len(runtimes))
	for i, r := range runtimes {
		ids[i] = r.InstanceID
		index[r.InstanceID] = i
		runtimes[i].Operations = []RuntimeOperation{}
	}
	rows, _ := s.pool.Query(ctx, `SELECT operation_id, instance_id, type, state, description, finished_stages,
		error_message, created_at, updated_at FROM operations WHERE instance_id = ANY($1::text[])
		ORDER BY instance_id, created_at DESC, operation_id DESC`, ids)
	ops, err := pgx.CollectRows(rows, pgx.RowToStructByName[RuntimeOperation])
	if err != nil {
		return fmt.Errorf("reading operations of %d runtimes: %w", len(ids), err)
	}
	for _, op := range ops {
		i := index[op.InstanceID]
		runtimes[i].Operations = append(runtimes[i].Operations, op)
	}
	return nil
}
