package storage

import (
	"encoding/json"
	"time"
)

// OperationType is what an operation does to its instance; the engine runs
// one pipeline per type. The values are stored: never rename one.
type OperationType string

// Operation types.
const (
	OperationTypeProvision   OperationType = "provision"
	OperationTypeDeprovision OperationType = "deprovision"
	OperationTypeUpdate      OperationType = "update"
	// Upgrades are started by orchestrations (internal/orchestration).
	OperationTypeUpgradeKyma    OperationType = "upgrade_kyma"
	OperationTypeUpgradeCluster OperationType = "upgrade_cluster"
)

// IsUpgrade reports whether an operation type is an orchestration's upgrade.
func (t OperationType) IsUpgrade() bool {
	return t == OperationTypeUpgradeKyma || t == OperationTypeUpgradeCluster
}

// OperationState is where an operation is in its life, in OSB's words so
// last_operation needs no mapping. The values are stored: never rename one.
type OperationState string

// Operation states.
const (
	OperationInProgress OperationState = "in progress"
	OperationSucceeded  OperationState = "succeeded"
	OperationFailed     OperationState = "failed"
)

// Instance is a service instance as the platform asked for it.
type Instance struct {
	InstanceID      string `db:"instance_id"`
	RuntimeID       string `db:"runtime_id"`
	GlobalAccountID string `db:"global_account_id"`
	SubAccountID    string `db:"subaccount_id"`
	UserID          string `db:"user_id"`
	ServiceID       string `db:"service_id"`
	PlanID          string `db:"plan_id"`
	PlanName        string `db:"plan_name"`
	// OnePerGlobalAccountPlan is the plan's name when plans.yaml allows a
	// global account one instance of the plan (onePerGlobalAccount), nil
	// otherwise; a unique index on (global account, this) enforces the rule.
	OnePerGlobalAccountPlan *string         `db:"one_per_global_account_plan"`
	PlatformRegion          string          `db:"platform_region"`
	Provider                string          `db:"provider"`
	ProviderRegion          string          `db:"provider_region"`
	Parameters              json.RawMessage `db:"parameters"`
	Context                 json.RawMessage `db:"context"`
	// Credentials is the plaintext sm_operator_credentials JSON. It is sealed
	// on the way into the database and opened on the way out; nil when the
	// request carried none.
	Credentials  []byte `db:"-"`
	DashboardURL string `db:"dashboard_url"`
	ClusterID    string `db:"cluster_id"`
	// State is the runtime's state as operators see it, kept in step with
	// the instance's operations.
	State     RuntimeState `db:"state"`
	ShootName string       `db:"shoot_name"`
	// ResolvedParameters are the values the last successful provisioning
	// ran with; {} until one succeeded.
	ResolvedParameters json.RawMessage `db:"resolved_parameters"`
	// ExpiredAt is set once a trial or free instance expired.
	ExpiredAt *time.Time `db:"expired_at"`
	// KymaState and KymaModules are what the control-plane watch last saw
	// of the runtime's Kyma CR (see KymaState); nil without one.
	KymaState   *string         `db:"kyma_state"`
	KymaModules json.RawMessage `db:"kyma_modules"`
	// KymaRecord is what the runtime runs of Kyma, keb's own record (no
	// control-plane object holds it); empty until a provisioning succeeded.
	KymaRecord
	// SubscriptionGlobalAccountID is the global account the instance was
	// created in, once its subaccount moved to another (GlobalAccountID);
	// "" when it never moved. The hyperscaler account pool's claim is this
	// account's (PoolTenant).
	SubscriptionGlobalAccountID string    `db:"subscription_global_account_id"`
	CreatedAt                   time.Time `db:"created_at"`
	UpdatedAt                   time.Time `db:"updated_at"`
}

// PoolTenant is the global account whose hyperscaler account the instance
// uses: the one it was created in, even after its subaccount moved.
func (i Instance) PoolTenant() string {
	if i.SubscriptionGlobalAccountID != "" {
		return i.SubscriptionGlobalAccountID
	}
	return i.GlobalAccountID
}

// KymaRecord is keb's record of a runtime's Kyma: the version, the
// components installed (in installation order) and the control-plane Secret
// holding the runtime's resolved overrides. The overrides Secret carries the
// version and the components too, for installers (internal/overrides).
type KymaRecord struct {
	KymaVersion     string   `db:"kyma_version"`
	KymaComponents  []string `db:"kyma_components"`
	OverridesSecret string   `db:"kyma_overrides_secret"`
}

// DisplayName is what people call the instance: its name parameter, else
// its shoot's name (the parameter is optional on some plans), else its
// runtime ID. It names the Name label and the people's kubeconfig's cluster,
// context and user.
func (i Instance) DisplayName() string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(i.Parameters, &p) // stored parameters are validated JSON; a failure leaves the fallback
	switch {
	case p.Name != "":
		return p.Name
	case i.ShootName != "":
		return i.ShootName
	}
	return i.RuntimeID
}

// Suspended reports whether the instance is suspended: its runtime is gone,
// the instance stays.
func (i Instance) Suspended() bool { return i.State == RuntimeSuspended }

// Operation is one provisioning, deprovisioning or update of an instance.
type Operation struct {
	ID             string          `db:"operation_id"`
	InstanceID     string          `db:"instance_id"`
	Type           OperationType   `db:"type"`
	State          OperationState  `db:"state"`
	Description    string          `db:"description"`
	Stage          string          `db:"stage"`
	FinishedStages []string        `db:"finished_stages"`
	ErrorMessage   string          `db:"error_message"`
	Deadline       time.Time       `db:"deadline"`
	Data           json.RawMessage `db:"data"`
	// Temporary marks a deprovisioning that suspends the instance: the
	// runtime is removed, the instance stays.
	Temporary bool `db:"temporary"`
	// Request is what an update operation changes; nil for other types and
	// for updates that only push credentials recorded before it existed.
	Request    *UpdateRequest `db:"update_request"`
	JobID      *int64         `db:"job_id"`
	WokenAt    *time.Time     `db:"woken_at"`
	CreatedAt  time.Time      `db:"created_at"`
	UpdatedAt  time.Time      `db:"updated_at"`
	FinishedAt *time.Time     `db:"finished_at"`
}

// InProgress reports whether the operation has not finished yet.
func (o Operation) InProgress() bool { return o.State == OperationInProgress }

// UpdateRequest is what a PATCH asked of a running runtime. The instance
// keeps its recorded plan and parameters until the update succeeds.
type UpdateRequest struct {
	// PlanID and PlanName are the plan after the update (the instance's own
	// when the PATCH keeps it).
	PlanID   string `json:"planID"`
	PlanName string `json:"planName"`
	// Parameters are the instance's parameters after the update: the stored
	// ones with the PATCH's over them, validated, without defaults.
	Parameters json.RawMessage `json:"parameters"`
	// Credentials says that the PATCH brought new sm_operator_credentials
	// (already stored) to push into the runtime.
	Credentials bool `json:"credentials,omitempty"`
	// GlobalAccountMoved says that the PATCH moved the subaccount to
	// another global account (already stored): the runtime's CRs are
	// relabelled.
	GlobalAccountMoved bool `json:"globalAccountMoved,omitempty"`
}

// ChangesRuntime reports whether the update changes the runtime's plan or
// parameters (rather than only pushing credentials).
func (r *UpdateRequest) ChangesRuntime() bool { return r != nil && r.Parameters != nil }

// ActionType says what kind of change an entry of an instance's history records.
type ActionType string

// Action types of an instance's history.
const (
	// ActionPlanUpdate records a plan change: old and new plan name.
	ActionPlanUpdate ActionType = "PlanUpdate"
	// ActionSubaccountMovement records a subaccount moved to another global
	// account: old and new global account.
	ActionSubaccountMovement ActionType = "subaccount_movement"
)

// Action is one entry of an instance's history of changes.
type Action struct {
	ID          int64      `db:"action_id"`
	InstanceID  string     `db:"instance_id"`
	OperationID string     `db:"operation_id"`
	Type        ActionType `db:"type"`
	Message     string     `db:"message"`
	OldValue    string     `db:"old_value"`
	NewValue    string     `db:"new_value"`
	CreatedAt   time.Time  `db:"created_at"`
}

// ArchivedOperation is what the archive keeps of one operation of a
// deprovisioned instance (Store.ArchiveAndRemove): no parameters, no step
// history, description and error cut at a bound.
type ArchivedOperation struct {
	ID    string         `json:"id"`
	Type  OperationType  `json:"type"`
	State OperationState `json:"state"`
	// Temporary marks a suspension (a deprovisioning that kept the instance).
	Temporary   bool      `json:"temporary"`
	Description string    `json:"description"`
	Error       string    `json:"error"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// ArchivedHistory is the operations an archive row keeps, oldest first.
type ArchivedHistory struct {
	// Kept is false for instances archived before keb kept operations.
	Kept       bool
	Operations []ArchivedOperation
	// LeftOut counts the older operations beyond MaxArchivedOperations.
	LeftOut int
}

// ArchivedInstance is what is kept of an instance after deprovisioning.
type ArchivedInstance struct {
	InstanceID              string         `db:"instance_id"`
	RuntimeID               string         `db:"runtime_id"`
	GlobalAccountID         string         `db:"global_account_id"`
	SubAccountID            string         `db:"subaccount_id"`
	PlanID                  string         `db:"plan_id"`
	PlanName                string         `db:"plan_name"`
	PlatformRegion          string         `db:"platform_region"`
	Provider                string         `db:"provider"`
	ProviderRegion          string         `db:"provider_region"`
	ShootName               string         `db:"shoot_name"`
	ProvisioningState       OperationState `db:"provisioning_state"`
	LastDeprovisioningID    string         `db:"last_deprovisioning_id"`
	InstanceCreatedAt       time.Time      `db:"instance_created_at"`
	DeprovisioningStartedAt time.Time      `db:"deprovisioning_started_at"`
	ArchivedAt              time.Time      `db:"archived_at"`
	// DeprovisioningDescription is what the deprovisioning said when it
	// ended; "" for instances archived before it was kept.
	DeprovisioningDescription string `db:"deprovisioning_description"`
	// Leftovers are what the deprovisioning's skipped steps left behind
	// (a JSON array of process.Leftover); nil when nothing was left.
	Leftovers json.RawMessage `db:"leftovers"`
}
