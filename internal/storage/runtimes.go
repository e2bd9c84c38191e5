package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// RuntimeState is an instance's runtime state as operators see it (KEB's
// words, not OSB's): instances.state, and the state /info/runtimes filters
// on. Some values are spelled like OperationState values; they are another
// concept. The values are stored: never rename one.
type RuntimeState string

// Runtime states.
const (
	RuntimeProvisioning   RuntimeState = "provisioning"
	RuntimeSucceeded      RuntimeState = "succeeded"
	RuntimeFailed         RuntimeState = "failed"
	RuntimeDeprovisioning RuntimeState = "deprovisioning"
	RuntimeDeprovisioned  RuntimeState = "deprovisioned"
	// RuntimeSuspended is a runtime removed by suspension (trial expiry);
	// the instance stays.
	RuntimeSuspended RuntimeState = "suspended"
)

// RuntimeStates are every state a runtime can be filtered on.
var RuntimeStates = []RuntimeState{RuntimeProvisioning, RuntimeSucceeded, RuntimeFailed, RuntimeDeprovisioning,
	RuntimeDeprovisioned, RuntimeSuspended}

// DefaultRuntimeStates is what a query without a state filter matches: every
// state but deprovisioned, because archived instances are history that an
// operator asks for on purpose.
var DefaultRuntimeStates = []RuntimeState{RuntimeProvisioning, RuntimeSucceeded, RuntimeFailed, RuntimeDeprovisioning,
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
	States []RuntimeState
	// KymaStates are Kyma CR states (instances.kyma_state, as Lifecycle
	// Manager reports them); archived runtimes have none.
	KymaStates []string
	// Page is 1-based; ignored when After is set.
	Page     int
	PageSize int
	// After is the keyset cursor: only runtimes ordered after it are read.
	After *RuntimeCursor
	// AllOperations also loads every operation of the page's instances.
	AllOperations bool
	// Bindings also loads the page's instances' service bindings.
	Bindings bool
	// Expired keeps only trial and free runtimes that have expired
	// (instances.expired_at set); archived runtimes, whose archive entry
	// does not keep the expiry, never match.
	Expired bool
}

// RuntimeCursor is the position of a runtime in the listing order.
type RuntimeCursor struct {
	CreatedAt  time.Time
	InstanceID string
}

// RuntimeOperation is an operation as a runtime listing shows it.
type RuntimeOperation struct {
	ID             string         `db:"operation_id"`
	InstanceID     string         `db:"instance_id"`
	Type           OperationType  `db:"type"`
	State          OperationState `db:"state"`
	Description    string         `db:"description"`
	FinishedStages []string       `db:"finished_stages"`
	ErrorMessage   string         `db:"error_message"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
	// Temporary marks a suspending deprovisioning; read only for the
	// listing's op_detail=all.
	Temporary bool `db:"temporary"`
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
	State           RuntimeState
	// KymaState is the Kyma CR's state as Lifecycle Manager last reported
	// it; "" without one (archived runtimes, or none seen yet).
	KymaState string
	// Leftovers are what a deprovisioned instance's deprovisioning left
	// behind (ArchivedInstance.Leftovers); nil for live instances and
	// archived ones without leftovers.
	Leftovers json.RawMessage
	// EUAccess: the runtime's hyperscaler account is an EU-access one.
	EUAccess bool
	// SubscriptionGlobalAccountID is the global account the instance was
	// created in when its subaccount has moved since; "" otherwise.
	SubscriptionGlobalAccountID string
	// SubscriptionSecretName is the hyperscaler account (Gardener binding)
	// the runtime was created with; nil before one was claimed, and for
	// archived runtimes.
	SubscriptionSecretName *string
	// LicenseType and CommercialModel are the OSB context's license_type
	// and commercial_model as the platform sent them; nil when it did not.
	LicenseType, CommercialModel *string
	// BetaEnabled and UsedForProduction are the subaccount's CIS
	// attributes as the subaccount sync last stored them
	// (subaccount_states); nil when it has not seen the subaccount.
	BetaEnabled       *bool
	UsedForProduction *string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	// DeletedAt is when a deprovisioned instance was archived; nil for live ones.
	DeletedAt *time.Time
	// ExpiredAt is when a trial or free instance expired; nil when it has
	// not, and for archived instances (the archive does not keep it).
	ExpiredAt      *time.Time
	Provisioning   *RuntimeOperation
	Deprovisioning *RuntimeOperation
	// Suspension is the newest deprovisioning when it suspended the instance
	// (also in Deprovisioning); Unsuspension the newest provisioning when it
	// resumed a suspended instance (also in Provisioning); Update the newest
	// update operation. Upstream KEB's DTO reports these apart.
	Suspension   *RuntimeOperation
	Unsuspension *RuntimeOperation
	Update       *RuntimeOperation
	// UpgradingKyma and UpgradingCluster are the newest upgrades
	// orchestrations ran on the runtime.
	UpgradingKyma    *RuntimeOperation
	UpgradingCluster *RuntimeOperation
	// MaintenanceWindowBegin and End ("HH:MM:SS", UTC) are the runtime's
	// maintenance window; empty for archived runtimes and those provisioned
	// before windows were resolved.
	MaintenanceWindowBegin, MaintenanceWindowEnd string
	// Operations are all operations, newest first; filled only when the
	// query asked for them.
	Operations []RuntimeOperation
	// Bindings are the instance's service bindings, oldest first; filled
	// only when the query asked for them.
	Bindings []RuntimeBinding
}

// RuntimeBinding is a service binding as the runtime listing shows it: no
// kubeconfig, no token.
type RuntimeBinding struct {
	ID         string       `db:"binding_id"`
	InstanceID string       `db:"instance_id"`
	State      BindingState `db:"state"`
	CreatedAt  time.Time    `db:"created_at"`
	ExpiresAt  time.Time    `db:"expires_at"`
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
	State           RuntimeState    `db:"state"`
	KymaState       *string         `db:"kyma_state"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
	DeletedAt       *time.Time      `db:"deleted_at"`
	ExpiredAt       *time.Time      `db:"expired_at"`
	MWBegin         string          `db:"maintenance_window_begin"`
	MWEnd           string          `db:"maintenance_window_end"`
	Leftovers       json.RawMessage `db:"leftovers"`
	EUAccess        bool            `db:"eu_access"`
	SubscriptionGA  string          `db:"subscription_global_account_id"`
	SecretName      *string         `db:"subscription_secret_name"`
	LicenseType     *string         `db:"license_type"`
	CommercialModel *string         `db:"commercial_model"`
	BetaEnabled     *bool           `db:"beta_enabled"`
	ForProduction   *string         `db:"used_for_production"`

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
	DTemporary      *bool      `db:"d_temporary"`
	PResumed        *bool      `db:"p_resumed"`

	UOperationID    *string    `db:"u_operation_id"`
	UState          *string    `db:"u_state"`
	UDescription    *string    `db:"u_description"`
	UFinishedStages []string   `db:"u_finished_stages"`
	UErrorMessage   *string    `db:"u_error_message"`
	UCreatedAt      *time.Time `db:"u_created_at"`
	UUpdatedAt      *time.Time `db:"u_updated_at"`

	KOperationID    *string    `db:"k_operation_id"`
	KState          *string    `db:"k_state"`
	KDescription    *string    `db:"k_description"`
	KFinishedStages []string   `db:"k_finished_stages"`
	KErrorMessage   *string    `db:"k_error_message"`
	KCreatedAt      *time.Time `db:"k_created_at"`
	KUpdatedAt      *time.Time `db:"k_updated_at"`

	COperationID    *string    `db:"c_operation_id"`
	CState          *string    `db:"c_state"`
	CDescription    *string    `db:"c_description"`
	CFinishedStages []string   `db:"c_finished_stages"`
	CErrorMessage   *string    `db:"c_error_message"`
	CCreatedAt      *time.Time `db:"c_created_at"`
	CUpdatedAt      *time.Time `db:"c_updated_at"`
}

func rowOperation(instanceID string, typ OperationType, id, state, desc, errMsg *string, stages []string, created, updated *time.Time) *RuntimeOperation {
	if id == nil {
		return nil
	}
	op := &RuntimeOperation{ID: *id, InstanceID: instanceID, Type: typ, FinishedStages: stages,
		State: OperationState(deref(state)), Description: deref(desc), ErrorMessage: deref(errMsg)}
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
	rt := r.listed()
	if r.DTemporary != nil && *r.DTemporary {
		rt.Suspension = rt.Deprovisioning
	}
	if r.PResumed != nil && *r.PResumed {
		rt.Unsuspension = rt.Provisioning
	}
	rt.Update = rowOperation(r.InstanceID, OperationTypeUpdate, r.UOperationID, r.UState, r.UDescription,
		r.UErrorMessage, r.UFinishedStages, r.UCreatedAt, r.UUpdatedAt)
	rt.UpgradingKyma = rowOperation(r.InstanceID, OperationTypeUpgradeKyma, r.KOperationID, r.KState, r.KDescription,
		r.KErrorMessage, r.KFinishedStages, r.KCreatedAt, r.KUpdatedAt)
	rt.UpgradingCluster = rowOperation(r.InstanceID, OperationTypeUpgradeCluster, r.COperationID, r.CState, r.CDescription,
		r.CErrorMessage, r.CFinishedStages, r.CCreatedAt, r.CUpdatedAt)
	rt.MaintenanceWindowBegin, rt.MaintenanceWindowEnd = r.MWBegin, r.MWEnd
	return rt
}

func (r runtimeRow) listed() Runtime {
	return Runtime{
		InstanceID: r.InstanceID, RuntimeID: r.RuntimeID, GlobalAccountID: r.GlobalAccountID,
		SubAccountID: r.SubAccountID, UserID: r.UserID, ServiceID: r.ServiceID, PlanID: r.PlanID,
		PlanName: r.PlanName, PlatformRegion: r.PlatformRegion, Provider: r.Provider,
		ProviderRegion: r.ProviderRegion, ShootName: r.ShootName, Parameters: r.Parameters, State: r.State,
		KymaState: deref(r.KymaState), Leftovers: r.Leftovers, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, DeletedAt: r.DeletedAt, ExpiredAt: r.ExpiredAt,
		EUAccess: r.EUAccess, SubscriptionGlobalAccountID: r.SubscriptionGA, SubscriptionSecretName: r.SecretName,
		LicenseType: r.LicenseType, CommercialModel: r.CommercialModel, BetaEnabled: r.BetaEnabled,
		UsedForProduction: r.ForProduction,
		Provisioning: rowOperation(r.InstanceID, OperationTypeProvision, r.POperationID, r.PState, r.PDescription,
			r.PErrorMessage, r.PFinishedStages, r.PCreatedAt, r.PUpdatedAt),
		Deprovisioning: rowOperation(r.InstanceID, OperationTypeDeprovision, r.DOperationID, r.DState, r.DDescription,
			r.DErrorMessage, r.DFinishedStages, r.DCreatedAt, r.DUpdatedAt),
	}
}

// liveRows are live instances as listing rows. State and shoot name are the
// instance's own columns, which the store keeps in step with its operations
// in the same transactions, so filtering and counting on them read instances
// alone. archived and the a_* columns line the rows up with archivedRows.
const liveRows = `SELECT i.instance_id, i.runtime_id, i.global_account_id, i.subaccount_id, i.user_id,
	i.service_id, i.plan_id, i.plan_name, i.platform_region, i.provider, i.provider_region, i.shoot_name,
	i.parameters, i.state, i.kyma_state, i.created_at, i.updated_at, NULL::timestamptz AS deleted_at, i.expired_at,
	i.maintenance_window_begin, i.maintenance_window_end, i.eu_access, false AS archived,
	i.subscription_global_account_id, i.subscription_secret_name,
	i.context->>'license_type' AS license_type, i.context->>'commercial_model' AS commercial_model,
	NULL::text AS a_deprovisioning_id, NULL::timestamptz AS a_deprovisioning_started_at,
	NULL::text AS a_deprovisioning_description, NULL::jsonb AS leftovers
FROM instances i`

// archivedRows are archived instances as listing rows. An instance is in
// one of the two tables, never in both (Store.ArchiveAndRemove archives it
// and deletes its instances row in one transaction; migration 00006 removed
// the instances that older versions had left in both), so the archive is read
// alone, without looking for its instances among the live ones. The archive
// keeps neither the user, the parameters nor the expiry; a_* carry its
// summary of the deprovisioning.
const archivedRows = `SELECT a.instance_id, a.runtime_id, a.global_account_id, a.subaccount_id, '' AS user_id,
	'' AS service_id, a.plan_id, a.plan_name, a.platform_region, a.provider, a.provider_region, a.shoot_name,
	'{}'::jsonb AS parameters, 'deprovisioned' AS state, NULL::text AS kyma_state, a.instance_created_at AS created_at,
	a.archived_at AS updated_at, a.archived_at AS deleted_at, NULL::timestamptz AS expired_at,
	'' AS maintenance_window_begin, '' AS maintenance_window_end, false AS eu_access, true AS archived,
	'' AS subscription_global_account_id, NULL::text AS subscription_secret_name,
	NULL::text AS license_type, NULL::text AS commercial_model,
	a.last_deprovisioning_id AS a_deprovisioning_id, a.deprovisioning_started_at AS a_deprovisioning_started_at,
	a.deprovisioning_description AS a_deprovisioning_description, a.leftovers
FROM instances_archive a`

// pageWithOperations joins the newest provisioning, deprovisioning and update to the
// page's rows, which the subquery r has already ordered and cut to one page:
// LIMIT sits inside r, so each LATERAL runs once per row of the page (one
// probe of operations_instance_created_idx), never for rows before the page
// (a page by number starts at its boundary, see RuntimesSQL) or filtered
// out. An archived row has no operations left (they went
// with its instances row): "NOT r.archived" turns its probes into a one-time
// filter, and its deprovisioning is built from the archive's summary.
const pageWithOperations = `SELECT r.instance_id, r.runtime_id, r.global_account_id, r.subaccount_id, r.user_id,
	r.service_id, r.plan_id, r.plan_name, r.platform_region, r.provider, r.provider_region, r.shoot_name,
	r.parameters, r.state, r.kyma_state, r.created_at, r.updated_at, r.deleted_at, r.expired_at,
	r.maintenance_window_begin, r.maintenance_window_end, r.leftovers, r.eu_access,
	r.subscription_global_account_id, r.subscription_secret_name, r.license_type, r.commercial_model,
	sa.beta_enabled, sa.used_for_production,
	p.operation_id AS p_operation_id, p.state AS p_state, p.description AS p_description,
	p.finished_stages AS p_finished_stages, p.error_message AS p_error_message,
	p.created_at AS p_created_at, p.updated_at AS p_updated_at,
	CASE WHEN r.archived THEN r.a_deprovisioning_id ELSE d.operation_id END AS d_operation_id,
	CASE WHEN r.archived THEN 'succeeded' ELSE d.state END AS d_state,
	CASE WHEN r.archived THEN r.a_deprovisioning_description ELSE d.description END AS d_description,
	CASE WHEN r.archived THEN '{}'::text[] ELSE d.finished_stages END AS d_finished_stages,
	CASE WHEN r.archived THEN '' ELSE d.error_message END AS d_error_message,
	CASE WHEN r.archived THEN r.a_deprovisioning_started_at ELSE d.created_at END AS d_created_at,
	CASE WHEN r.archived THEN r.updated_at ELSE d.updated_at END AS d_updated_at,
	d.temporary AS d_temporary, p.resumed AS p_resumed,
	u.operation_id AS u_operation_id, u.state AS u_state, u.description AS u_description,
	u.finished_stages AS u_finished_stages, u.error_message AS u_error_message,
	u.created_at AS u_created_at, u.updated_at AS u_updated_at,
	k.operation_id AS k_operation_id, k.state AS k_state, k.description AS k_description,
	k.finished_stages AS k_finished_stages, k.error_message AS k_error_message,
	k.created_at AS k_created_at, k.updated_at AS k_updated_at,
	c.operation_id AS c_operation_id, c.state AS c_state, c.description AS c_description,
	c.finished_stages AS c_finished_stages, c.error_message AS c_error_message,
	c.created_at AS c_created_at, c.updated_at AS c_updated_at
FROM (%s) r
LEFT JOIN subaccount_states sa ON sa.subaccount_id = r.subaccount_id
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at,
	-- a resumption: a suspension came before it (one more probe of the same index)
	EXISTS (SELECT 1 FROM operations s WHERE s.instance_id = o.instance_id AND s.type = 'deprovision'
		AND s.temporary AND s.created_at < o.created_at) AS resumed
	FROM operations o
	WHERE NOT r.archived AND o.instance_id = r.instance_id AND o.type = 'provision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) p ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at, o.temporary FROM operations o
	WHERE NOT r.archived AND o.instance_id = r.instance_id AND o.type = 'deprovision'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) d ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o
	WHERE NOT r.archived AND o.instance_id = r.instance_id AND o.type = 'update'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) u ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o
	WHERE NOT r.archived AND o.instance_id = r.instance_id AND o.type = 'upgrade_kyma'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) k ON true
LEFT JOIN LATERAL (SELECT o.operation_id, o.state, o.description, o.finished_stages, o.error_message,
	o.created_at, o.updated_at FROM operations o
	WHERE NOT r.archived AND o.instance_id = r.instance_id AND o.type = 'upgrade_cluster'
	ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) c ON true
ORDER BY r.created_at, r.instance_id`

// runtimeSQL builds the page statement and the count statement for q. The SQL
// is built per query with only the filters given, rather than one statement
// with "$n IS NULL OR ..." arms, so that the planner sees plain predicates it
// can match to indexes.
type runtimeSQL struct {
	args []any
}

func (b *runtimeSQL) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// in is "col matches one of values". A single value is written as plain
// equality, not "= ANY(array)": only equality makes the filtered column a
// constant to the planner, so that an index (col, created_at, instance_id)
// delivers rows in listing order and the page stops after page_size+1.
func (b *runtimeSQL) in(col string, values []string) string {
	if len(values) == 1 {
		return col + " = " + b.arg(values[0]) + "::text"
	}
	return col + " = ANY(" + b.arg(values) + "::text[])"
}

// branch names a table's columns for the filters.
type branch struct {
	account, subaccount, instance, runtime, region, plan, shoot, created string
	// kyma is the Kyma state's column; "" for the archive, which has none.
	kyma string
	// expired is the expiry's column; "" for the archive, which has none.
	expired string
}

var (
	liveBranch = branch{account: "i.global_account_id", subaccount: "i.subaccount_id", instance: "i.instance_id",
		runtime: "i.runtime_id", region: "i.provider_region", plan: "i.plan_name", shoot: "i.shoot_name",
		created: "i.created_at", kyma: "i.kyma_state", expired: "i.expired_at"}
	archiveBranch = branch{account: "a.global_account_id", subaccount: "a.subaccount_id", instance: "a.instance_id",
		runtime: "a.runtime_id", region: "a.provider_region", plan: "a.plan_name", shoot: "a.shoot_name",
		created: "a.instance_created_at"}
)

// where returns the filter predicates of one branch (live or archive) for q.
func (b *runtimeSQL) where(q RuntimeQuery, col branch) []string {
	var preds []string
	add := func(c string, values []string) {
		if len(values) > 0 {
			preds = append(preds, b.in(c, values))
		}
	}
	add(col.account, q.GlobalAccountIDs)
	add(col.subaccount, q.SubAccountIDs)
	add(col.instance, q.InstanceIDs)
	add(col.runtime, q.RuntimeIDs)
	add(col.region, q.Regions)
	add(col.plan, q.Plans)
	if len(q.KymaStates) > 0 {
		if col.kyma == "" {
			preds = append(preds, "false") // archived runtimes have no Kyma CR
		} else {
			add(col.kyma, q.KymaStates)
		}
	}
	if len(q.Shoots) > 0 {
		// instances_shoot_idx only holds named shoots; stating "<> ''"
		// keeps it usable by a plan that does not see the value (a generic
		// one). A runtime without a shoot has no name to be found by.
		preds = append(preds, b.in(col.shoot, q.Shoots), col.shoot+" <> ''")
	}
	if q.Expired {
		if col.expired == "" {
			preds = append(preds, "false") // the archive does not keep the expiry
		} else {
			preds = append(preds, col.expired+" IS NOT NULL")
		}
	}
	if q.After != nil {
		preds = append(preds, "("+col.created+", "+col.instance+") > ("+b.arg(q.After.CreatedAt)+"::timestamptz, "+
			b.arg(q.After.InstanceID)+"::text)")
	}
	return preds
}

// stateFilter is the live branch's state filter as the simplest plain
// predicate: none when every state is asked for, equality for one state
// (instances_state_created_idx then delivers the page in order), "<>" when
// all but one are (the default: all but deprovisioned), and "= ANY"
// otherwise.
type stateFilter struct {
	all    bool     // no predicate
	except string   // "i.state <> except"
	states []string // "i.state = states[0]" or "= ANY(states)"
}

func newStateFilter(states []RuntimeState) stateFilter {
	var asked []string
	for _, s := range states {
		if !slices.Contains(asked, string(s)) {
			asked = append(asked, string(s))
		}
	}
	var missing []string
	for _, s := range RuntimeStates {
		if !slices.Contains(asked, string(s)) {
			missing = append(missing, string(s))
		}
	}
	known := len(asked)+len(missing) == len(RuntimeStates) // no unknown state asked for
	switch {
	case len(missing) == 0:
		return stateFilter{all: true}
	case len(asked) > 1 && known && len(missing) == 1:
		return stateFilter{except: missing[0]}
	default:
		return stateFilter{states: asked}
	}
}

// predicate writes f for b; "" when f does not filter.
func (f stateFilter) predicate(b *runtimeSQL) string {
	switch {
	case f.all:
		return ""
	case f.except != "":
		return "i.state <> " + b.arg(f.except) + "::text"
	default:
		return b.in("i.state", f.states)
	}
}

func joinWhere(preds []string) string {
	if len(preds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(preds, " AND ")
}

// RuntimesSQL returns the page statement (LIMIT page_size+1, to know whether a
// next page exists without another statement; for a page by number, preceded
// by the CTE of its boundary, see boundarySQL), the count statement, and
// their arguments. The count reads only instances (and, when deprovisioned
// runtimes are asked for, the archive) with plain predicates, never
// operations. It ignores the cursor: it is the total of the listing, not of
// what is left. The page is the one built without the total (its boundary
// counted from the start); Runtimes runs the count first and builds the page
// with RuntimesPageSQL. Exported so that tests and testing/runtimesload
// EXPLAIN exactly what Runtimes runs.
func RuntimesSQL(q RuntimeQuery) (page string, pageArgs []any, count string, countArgs []any) {
	page, pageArgs = RuntimesPageSQL(q, RuntimesCount{Total: -1})
	count, countArgs = RuntimesCountSQL(q)
	return page, pageArgs, count, countArgs
}

// runtimesPageSize is q's page size, the default where it has none.
func runtimesPageSize(q RuntimeQuery) int {
	if q.PageSize <= 0 {
		return 100
	}
	return q.PageSize
}

// runtimesOffset is the number of rows before q's page: 0 for the first page
// and for a page by cursor.
func runtimesOffset(q RuntimeQuery) int {
	if q.After == nil && q.Page > 1 {
		return (q.Page - 1) * runtimesPageSize(q)
	}
	return 0
}

// runtimesStates is the live branch's state filter of q and whether the
// archive is read too (deprovisioned runtimes asked for).
func runtimesStates(q RuntimeQuery) (stateFilter, bool) {
	states := q.States
	if len(states) == 0 {
		states = DefaultRuntimeStates
	}
	// Live instances can be in every state. A live one is deprovisioned
	// only if a deprovisioning succeeded without removing it, which no
	// pipeline does (ArchiveAndRemove deletes the operation with its
	// instance before it can finish); the state is valid, so such a row
	// would be listed, from instances, like any other.
	return newStateFilter(states), slices.Contains(states, RuntimeDeprovisioned)
}

// RuntimesPageSQL returns the page statement of q and its arguments. count
// is what the count statement (RuntimesCountSQL) returned in the same
// snapshot, or a Total of -1 when it is not known.
//
// A page by number whose count placed its first row in a creation month
// (count.Month, see monthCount) finds its boundary within that month: the
// row at offset o is the (o-Before)th of the month's rows, which the
// boundary reads from the month's first key on (or from its last, when it
// is in the second half of the month), so that it skips at most half of a
// month's keys whatever the page and the size of the fleet. Otherwise (a
// filter the kept counts do not have) a page that starts in the second
// half of the listing finds its boundary from the end: the row at offset o
// is the (total-1-o)th from the end, so that no page skips more than half
// of the listing's keys (page 751 of 1,000 pages of 100 skips 24,999 keys
// instead of 75,000). A page beyond the end is not read at all (Runtimes).
func RuntimesPageSQL(q RuntimeQuery, count RuntimesCount) (page string, pageArgs []any) {
	sf, withArchive := runtimesStates(q)

	// The page: the live branch, and the archive branch when deprovisioned
	// runtimes are asked for, ordered and cut to one page, then joined to
	// their operations.
	b := &runtimeSQL{}
	pageSize := runtimesPageSize(q)
	offset := runtimesOffset(q)
	// A page by number (offset > 0) is a deferred join: the boundary CTE
	// finds the key (created_at, instance_id) of the page's first row by
	// skipping keys, and the page is then read like a keyset page,
	// from that key on ("(created_at, instance_id) >= boundary") and cut by
	// LIMIT without OFFSET. The boundary reads keys only, which the
	// branches' ordering indexes hold: an index-only scan, not a visit of
	// every skipped row (see boundarySQL). A page beyond the end has no
	// boundary row; ">= NULL" is never true and the page is empty.
	var with, from string
	if offset > 0 {
		skip, total := offset, count.Total
		if !count.Month.IsZero() {
			skip, total = offset-count.Before, count.InMonth
		}
		fromEnd := skip < total && skip > (total-1)/2
		if fromEnd {
			skip = total - 1 - skip
		}
		with = "WITH boundary AS MATERIALIZED (" + b.boundarySQL(q, sf, withArchive, skip, fromEnd, count.Month) + ")\n"
		from = "(SELECT bd.created_at, bd.instance_id FROM boundary bd)"
	}
	livePreds := b.where(q, liveBranch)
	if p := sf.predicate(b); p != "" {
		livePreds = append(livePreds, p)
	}
	if from != "" {
		livePreds = append(livePreds, "(i.created_at, i.instance_id) >= "+from)
	}
	live := liveRows + joinWhere(livePreds)
	limit := " LIMIT " + strconv.Itoa(pageSize+1)
	var rows string
	if withArchive {
		archivePreds := b.where(q, archiveBranch)
		if from != "" {
			archivePreds = append(archivePreds, "(a.instance_created_at, a.instance_id) >= "+from)
		}
		archived := archivedRows + joinWhere(archivePreds)
		// Both branches come in (created_at, instance_id) order from their
		// indexes and are merged. Each is cut to the rows a page can need
		// from it, so that the planner costs neither as if read to the end
		// (PostgreSQL 15 does not cost merged branches under a LIMIT by the
		// fraction read). Without these LIMITs it sorted the whole archive
		// rather than read it in order and stop; that was measured while the
		// archive branch still probed instances for each row, but the
		// LIMITs cost nothing and keep the plan independent of it.
		rows = "SELECT * FROM ((" + live + "\nORDER BY i.created_at, i.instance_id" + limit + ")\nUNION ALL\n(" +
			archived + "\nORDER BY a.instance_created_at, a.instance_id" + limit + ")) u\nORDER BY u.created_at, u.instance_id" + limit
	} else {
		rows = live + "\nORDER BY i.created_at, i.instance_id" + limit
	}
	return with + fmt.Sprintf(pageWithOperations, rows), b.args
}

// RuntimesCountSQL returns the count statement of q and its arguments. Its
// one row is read by ScanRuntimesCount: the totalCount and, for a page by
// number without a selective filter, the creation month holding the page's
// first row (monthCount).
func RuntimesCountSQL(q RuntimeQuery) (count string, countArgs []any) {
	sf, withArchive := runtimesStates(q)
	// The count: a sum of counts of instances (and the archive) with plain
	// predicates. The cursor does not apply.
	qq := q
	qq.After = nil
	b := &runtimeSQL{}
	if !selectiveFilter(qq) {
		if offset := runtimesOffset(q); offset > 0 {
			return b.monthCount(qq, sf, withArchive, offset), b.args
		}
		return "SELECT (" + b.keptCount(qq, sf, withArchive) + ")" + noMonth, b.args
	}
	var terms []string
	if sf.except == string(RuntimeDeprovisioned) {
		// The default listing: every live instance but the deprovisioned
		// ones, of which there are none (see above) or next to none.
		// Counting all matching instances and subtracting those keeps
		// state out of the first count, so that it reads only the index of
		// whichever filter is given (state is in no index but its own)
		// instead of every matching row.
		terms = append(terms, b.liveCount(qq, stateFilter{all: true}),
			"- "+b.liveCount(qq, stateFilter{states: []string{string(RuntimeDeprovisioned)}}))
	} else {
		terms = append(terms, b.liveCount(qq, sf))
	}
	if withArchive {
		// Every matching archive row is a runtime of its own: no archived
		// instance is live (ArchiveAndRemove).
		terms = append(terms, "+ (SELECT count(*) FROM instances_archive a"+joinWhere(b.where(qq, archiveBranch))+")")
	}
	return "SELECT (" + strings.Join(terms, "\n") + ")" + noMonth, b.args
}

// noMonth completes the columns of a count statement that places no page
// in a month (ScanRuntimesCount).
const noMonth = "::bigint, NULL::timestamptz, NULL::bigint, NULL::bigint"

// RuntimesCount is what the count statement (RuntimesCountSQL) returns.
type RuntimesCount struct {
	// Total counts every runtime matching the filters: totalCount.
	Total int
	// Month is the creation month (its first instant in UTC) holding the
	// first row of a page by number, when the count was summed by month
	// (monthCount); zero otherwise, and for a page beyond the end. Before
	// is the number of the listing's rows created before Month, InMonth
	// the number created in it.
	Month           time.Time
	Before, InMonth int
}

// ScanRuntimesCount reads the row of the count statement.
func ScanRuntimesCount(row pgx.Row) (RuntimesCount, error) {
	var c RuntimesCount
	var month *time.Time
	var before, inMonth *int64
	if err := row.Scan(&c.Total, &month, &before, &inMonth); err != nil {
		return RuntimesCount{}, err
	}
	if month != nil && before != nil && inMonth != nil {
		c.Month, c.Before, c.InMonth = month.UTC(), int(*before), int(*inMonth)
	}
	return c, nil
}

// selectiveFilter reports whether q filters on a column the kept counts
// (runtime_counts) do not have: account, subaccount, instance, runtime,
// shoot or expiry. Each of those has its own index, whose range for the
// values asked is small (expired runtimes: instances_expired_created_idx,
// trial and free runtimes past their lifetime), so such a listing counts its
// rows there.
func selectiveFilter(q RuntimeQuery) bool {
	return q.Expired || len(q.GlobalAccountIDs)+len(q.SubAccountIDs)+len(q.InstanceIDs)+len(q.RuntimeIDs)+len(q.Shoots) > 0
}

// keptCount is the count of q (no selective filter, no cursor) summed from
// runtime_counts, which migration 00023's triggers append to in every
// transaction that writes instances or the archive: in the listing's
// snapshot the sum is exactly the number of matching rows that snapshot
// sees, and it reads a few hundred rows (more between two folds, see
// Store.FoldRuntimeCounts) whatever the size of the fleet. Archived rows
// are counted when deprovisioned runtimes are asked for (withArchive); they
// have no Kyma state, so a Kyma state filter excludes them as the archive
// branch's "false" does.
func (b *runtimeSQL) keptCount(q RuntimeQuery, sf stateFilter, withArchive bool) string {
	return "SELECT coalesce(sum(c.n), 0)::bigint FROM runtime_counts c" + joinWhere(b.keptPredicates(q, sf, withArchive))
}

// monthCount is the count of q (no selective filter, no cursor) for a page
// by number whose first row is at offset: its total and the creation month
// holding that row (RuntimesCount), summed from runtime_month_counts, which
// the triggers of runtime_counts keep by creation month too (migration
// 00025). The listing is ordered by creation time first, so the rows of the
// months before a month all come before its rows: the month holding offset
// is the one whose running sum passes it. Like keptCount it is exact in the
// listing's snapshot, and it reads the matching combinations of every month
// (some 1,200 rows at the load tool's 1,000,000 instances over a year).
// Months summing to zero (their runtimes gone, not yet folded) hold no row
// and are never chosen.
func (b *runtimeSQL) monthCount(q RuntimeQuery, sf stateFilter, withArchive bool, offset int) string {
	preds := b.keptPredicates(q, sf, withArchive)
	off := b.arg(int64(offset)) + "::bigint"
	return `WITH m AS (SELECT c.created_month, sum(c.n) AS n FROM runtime_month_counts c` + joinWhere(preds) + `
	GROUP BY c.created_month),
p AS (SELECT created_month, n, sum(n) OVER (ORDER BY created_month) - n AS before FROM m)
SELECT (SELECT coalesce(sum(n), 0) FROM m)::bigint, p.created_month, p.before::bigint, p.n::bigint
FROM (VALUES (1)) one (x) LEFT JOIN p ON p.n > 0 AND p.before <= ` + off + ` AND p.before + p.n > ` + off
}

// keptPredicates are the predicates of q on the kept counts' columns
// (runtime_counts c, runtime_month_counts c).
func (b *runtimeSQL) keptPredicates(q RuntimeQuery, sf stateFilter, withArchive bool) []string {
	var preds []string
	add := func(col string, values []string) {
		if len(values) > 0 {
			preds = append(preds, b.in(col, values))
		}
	}
	add("c.plan_name", q.Plans)
	add("c.provider_region", q.Regions)
	add("c.kyma_state", q.KymaStates)
	live := "NOT c.archived"
	switch {
	case sf.all:
	case sf.except != "":
		live += " AND c.state <> " + b.arg(sf.except) + "::text"
	default:
		live += " AND " + b.in("c.state", sf.states)
	}
	if withArchive {
		live = "(" + live + " OR c.archived)"
	}
	return append(preds, live)
}

// boundarySQL selects the key (created_at, instance_id) of the row at offset
// (0-based) in the listing order of q: the first row of a page by number. It
// reads keys only, so that skipping offset rows is an index-only scan of an
// index ending in the listing order (instances_created_at_idx,
// instances_state_created_idx, instances_plan_created_idx,
// instances_region_created_idx, instances_archive_created_idx) rather than a
// visit of every skipped row, as "LIMIT n OFFSET offset" on the full rows
// was (page 751 of 100,000: 75,000 rows read from the table to return 100).
// Index-only scans rely on the visibility map, which VACUUM (autovacuum in
// production) keeps current; on pages it does not mark all-visible the scan
// visits the table, which is what OFFSET did anyway.
//
// The state filter "all but one" (the default, all but deprovisioned) is
// written as an anti-join with that state's range of
// instances_state_created_idx instead of "state <> $n", which would have to
// read every skipped row's state from the table: both sides are in key
// order, so it is a merge anti-join of two index-only scans (the excluded
// side is empty or next to it, see RuntimesSQL), or, after an intersection
// (plan and region), a probe of that range per key. state is NOT NULL, so
// the two forms select the same rows.
//
// fromEnd reads the keys in descending order, offset being then counted
// from the last row (RuntimesPageSQL): the same indexes scanned backwards,
// the same merge (anti-)joins in descending key order.
//
// A month (not zero) confines the keys read to those created in that
// calendar month (UTC), offset being counted from the month's first row (or
// its last): each index's range starts at the month's first key, so the
// scan skips at most the month's keys. Every alias of an intersection and
// the archive branch get the range, so that each index's own scan is cut.
//
// With the archive, the offset applies to the merged order of both
// branches: each branch's keys are read in order, cut to offset+1 (no more
// can come before the boundary) and merged, and the merge is offset. Keys
// are unique across the branches because an instance is in one table only
// (Store.ArchiveAndRemove); were a key in both, a page starting at it would
// repeat the previous page's last row.
func (b *runtimeSQL) boundarySQL(q RuntimeQuery, sf stateFilter, withArchive bool, offset int, fromEnd bool, month time.Time) string {
	dir := ""
	if fromEnd {
		dir = " DESC"
	}
	inMonth := func(created string) []string {
		if month.IsZero() {
			return nil
		}
		return []string{created + " >= " + b.arg(month) + "::timestamptz",
			created + " < " + b.arg(month.AddDate(0, 1, 0)) + "::timestamptz"}
	}
	keyState := sf
	if sf.except != "" {
		keyState = stateFilter{all: true} // the anti-join below
	}
	from, key := "instances i", "i"
	var preds []string
	if f, p, ok := b.indexIntersection(q, keyState, inMonth); ok {
		// Two or more of state, plan and region: a merge of their
		// index-only scans.
		from, preds, key = f, p, "i1"
	} else {
		preds = b.where(q, liveBranch)
		if p := keyState.predicate(b); p != "" {
			preds = append(preds, p)
		}
		preds = append(preds, inMonth("i.created_at")...)
	}
	if sf.except != "" {
		preds = append(preds, "NOT EXISTS (SELECT 1 FROM instances x WHERE x.state = "+b.arg(sf.except)+
			"::text AND x.created_at = "+key+".created_at AND x.instance_id = "+key+".instance_id)")
	}
	live := "SELECT " + key + ".created_at, " + key + ".instance_id FROM " + from + joinWhere(preds) +
		"\nORDER BY " + key + ".created_at" + dir + ", " + key + ".instance_id" + dir
	cut := " OFFSET " + strconv.Itoa(offset) + " LIMIT 1"
	if !withArchive {
		return live + cut
	}
	branchLimit := " LIMIT " + strconv.Itoa(offset+1)
	archived := "SELECT a.instance_created_at AS created_at, a.instance_id FROM instances_archive a" +
		joinWhere(append(b.where(q, archiveBranch), inMonth("a.instance_created_at")...)) + "\nORDER BY a.instance_created_at" + dir + ", a.instance_id" + dir
	return "SELECT k.created_at, k.instance_id FROM ((" + live + branchLimit + ")\nUNION ALL\n(" + archived + branchLimit +
		")) k\nORDER BY k.created_at" + dir + ", k.instance_id" + dir + cut
}

// liveCount is "(SELECT count(*) ...)" of the live instances matching q
// (without its cursor) and state. Only listings with a selective filter
// count this way (the others sum runtime_counts, see keptCount), so the
// count reads that filter's index range.
func (b *runtimeSQL) liveCount(q RuntimeQuery, state stateFilter) string {
	preds := b.where(q, liveBranch)
	if p := state.predicate(b); p != "" {
		preds = append(preds, p)
	}
	return "(SELECT count(*) FROM instances i" + joinWhere(preds) + ")"
}

// indexIntersection is, when q (without a cursor) has no selective filter
// (account, subaccount, instance, runtime, shoot) but two or more of state
// (as equality, not "<>"), plan and region, and Kyma state, the join of
// instances with itself on (created_at, instance_id), one alias per filter
// (i1, i2, ...), and each alias's filter: the rows matching all of them,
// read from the indexes instances_state_created_idx,
// instances_plan_region_created_idx (plan, region or both) and
// instances_kyma_state_created_idx only, each alias also getting extra's
// predicates on its creation time. ok is false, and nothing is written to
// b, otherwise.
//
// Plan and region are one filter, read from the one index holding both:
// as two aliases (instances_plan_created_idx joined with
// instances_region_created_idx) the planner estimated their intersection at
// 1,000,000 instances as 1 row (62,553 in fact: a join on a unique key of
// two ranges whose correlation no statistics describe) and chose a parallel
// hash join of both ranges and a sort, 228 ms of backend CPU for page 500
// of plan=azure&region=westeurope. Alone, plan and region are plain
// predicates on that index, a range in listing order.
func (b *runtimeSQL) indexIntersection(q RuntimeQuery, state stateFilter, extra func(created string) []string) (from string, preds []string, ok bool) {
	type indexed struct {
		cols   []string
		values [][]string
	}
	var sets []indexed
	if len(state.states) > 0 {
		sets = append(sets, indexed{[]string{"state"}, [][]string{state.states}})
	}
	if len(q.Plans) > 0 || len(q.Regions) > 0 {
		var s indexed
		if len(q.Plans) > 0 {
			s.cols, s.values = append(s.cols, "plan_name"), append(s.values, q.Plans)
		}
		if len(q.Regions) > 0 {
			s.cols, s.values = append(s.cols, "provider_region"), append(s.values, q.Regions)
		}
		sets = append(sets, s)
	}
	if len(q.KymaStates) > 0 {
		sets = append(sets, indexed{[]string{"kyma_state"}, [][]string{q.KymaStates}})
	}
	if selectiveFilter(q) || q.After != nil || state.except != "" || len(sets) < 2 {
		return "", nil, false
	}
	from = "instances i1"
	for k, set := range sets {
		alias := "i" + strconv.Itoa(k+1)
		if k > 0 {
			from += " JOIN instances " + alias + " ON " + alias + ".created_at = i1.created_at AND " +
				alias + ".instance_id = i1.instance_id"
		}
		for c, col := range set.cols {
			preds = append(preds, b.in(alias+"."+col, set.values[c]))
		}
		preds = append(preds, extra(alias+".created_at")...)
	}
	return from, preds, true
}

// RuntimesTxOptions are those of the transaction a page's statements run
// in: read-only, and REPEATABLE READ so that they share one snapshot and the
// page and totalCount agree.
var RuntimesTxOptions = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// RuntimesTxSettings is the first statement of that transaction; its
// settings end with it, so the connection's other users are unaffected.
//
//   - jit off: a count's cost estimate grows with the table and passes
//     jit_above_cost long before the statement takes more than a few
//     milliseconds; compiling it then took longer than running it (1 to 2.5 s
//     of a 100,000-instance count, 8.9 s of JIT on a busy machine).
//   - force_custom_plan: pgx prepares each statement text and PostgreSQL
//     switches a prepared statement to a generic plan after five executions.
//     The generic plan cannot see which state or plan is asked for: for
//     state=suspended (100 of 100,000 rows) it walked the whole creation
//     order instead of instances_state_created_idx, 1 ms became 70-110 ms.
//     Planning each execution costs about a millisecond.
//
// One statement sets both (set_config with is_local true is SET LOCAL).
const RuntimesTxSettings = `SELECT set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_custom_plan', true)`

// Runtimes returns one page of the runtime listing in (created_at,
// instance_id) order. Whatever the page size, the page number and the
// number of runtimes it sends a fixed number of statements, in one
// transaction: BEGIN, RuntimesTxSettings, the count, the page, (with
// AllOperations) the page's operations, (with Bindings) their bindings, and
// COMMIT. The count comes first because the page's statement depends on it:
// a page by number beyond the end is known to be empty without reading it
// (one statement fewer), and a deep page finds its first row within the
// creation month the count placed it in, or from the end (RuntimesPageSQL).
func (s *Store) Runtimes(ctx context.Context, q RuntimeQuery) (RuntimePage, error) {
	countSQL, countArgs := RuntimesCountSQL(q)
	pageSize := runtimesPageSize(q)
	var page RuntimePage
	err := pgx.BeginTxFunc(ctx, s.pool, RuntimesTxOptions, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, RuntimesTxSettings); err != nil {
			return fmt.Errorf("setting up the listing's transaction: %w", err)
		}
		count, err := ScanRuntimesCount(tx.QueryRow(ctx, countSQL, countArgs...))
		if err != nil {
			return fmt.Errorf("counting runtimes: %w", err)
		}
		page.Total = count.Total
		if offset := runtimesOffset(q); offset > 0 && offset >= page.Total {
			page.Runtimes = []Runtime{}
			return nil
		}
		pageSQL, pageArgs := RuntimesPageSQL(q, count)
		rows, _ := tx.Query(ctx, pageSQL, pageArgs...)
		raw, err := pgx.CollectRows(rows, pgx.RowToStructByName[runtimeRow])
		if err != nil {
			return fmt.Errorf("reading runtimes: %w", err)
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
		if q.AllOperations && len(page.Runtimes) > 0 {
			if err := loadRuntimeOperations(ctx, tx, page.Runtimes); err != nil {
				return err
			}
		}
		if q.Bindings && len(page.Runtimes) > 0 {
			return loadRuntimeBindings(ctx, tx, page.Runtimes)
		}
		return nil
	})
	if err != nil {
		return RuntimePage{}, err
	}
	return page, nil
}

// loadRuntimeBindings fills every runtime's Bindings with one statement for
// the whole page; the kubeconfig column is never read.
func loadRuntimeBindings(ctx context.Context, tx pgx.Tx, runtimes []Runtime) error {
	ids := make([]string, len(runtimes))
	index := make(map[string]int, len(runtimes))
	for i, r := range runtimes {
		ids[i] = r.InstanceID
		index[r.InstanceID] = i
		runtimes[i].Bindings = []RuntimeBinding{}
	}
	rows, _ := tx.Query(ctx, `SELECT binding_id, instance_id, state, created_at, expires_at FROM bindings
		WHERE instance_id = ANY($1::text[]) ORDER BY instance_id, created_at, binding_id`, ids)
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByName[RuntimeBinding])
	if err != nil {
		return fmt.Errorf("reading bindings of %d runtimes: %w", len(ids), err)
	}
	for _, b := range bs {
		i := index[b.InstanceID]
		runtimes[i].Bindings = append(runtimes[i].Bindings, b)
	}
	return nil
}

// loadRuntimeOperations fills every runtime's Operations with one statement
// for the whole page.
func loadRuntimeOperations(ctx context.Context, tx pgx.Tx, runtimes []Runtime) error {
	ids := make([]string, len(runtimes))
	index := make(map[string]int, len(runtimes))
	for i, r := range runtimes {
		ids[i] = r.InstanceID
		index[r.InstanceID] = i
		runtimes[i].Operations = []RuntimeOperation{}
	}
	rows, _ := tx.Query(ctx, `SELECT operation_id, instance_id, type, state, description, finished_stages,
		error_message, created_at, updated_at, temporary FROM operations WHERE instance_id = ANY($1::text[])
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
