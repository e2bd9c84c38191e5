package storage

import (
	"encoding/json"
	"time"
)

// Operation types.
const (
	OperationTypeProvision   = "provision"
	OperationTypeDeprovision = "deprovision"
	OperationTypeUpdate      = "update"
	// Upgrades are started by orchestrations (internal/orchestration).
	OperationTypeUpgradeKyma    = "upgrade_kyma"
	OperationTypeUpgradeCluster = "upgrade_cluster"
)

// IsUpgrade reports whether an operation type is an orchestration's upgrade.
func IsUpgrade(opType string) bool {
	return opType == OperationTypeUpgradeKyma || opType == OperationTypeUpgradeCluster
}

// Operation states, in OSB's words so last_operation needs no mapping.
const (
	StateInProgress = "in progress"
	StateSucceeded  = "succeeded"
	StateFailed     = "failed"
)

// Instance is a service instance as the platform asked for it.
type Instance struct {
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
	Parameters      json.RawMessage `db:"parameters"`
	Context         json.RawMessage `db:"context"`
	// Credentials is the plaintext sm_operator_credentials JSON. It is sealed
	// on the way into the database and opened on the way out; nil when the
	// request carried none.
	Credentials  []byte `db:"-"`
	DashboardURL string `db:"dashboard_url"`
	ClusterID    string `db:"cluster_id"`
	// State is the runtime's state as operators see it (Runtime* constants),
	// kept in step with the instance's operations.
	State     string `db:"state"`
	ShootName string `db:"shoot_name"`
	// ResolvedParameters are the values the last successful provisioning
	// ran with; {} until one succeeded.
	ResolvedParameters json.RawMessage `db:"resolved_parameters"`
	// ExpiredAt is set once a trial or free instance expired.
	ExpiredAt *time.Time `db:"expired_at"`
	CreatedAt time.Time  `db:"created_at"`
	UpdatedAt time.Time  `db:"updated_at"`
	DeletedAt *time.Time `db:"deleted_at"`
}

// Suspended reports whether the instance is suspended: its runtime is gone,
// the instance stays.
func (i Instance) Suspended() bool { return i.State == RuntimeSuspended }

// Operation is one provisioning, deprovisioning or update of an instance.
type Operation struct {
	ID             string          `db:"operation_id"`
	InstanceID     string          `db:"instance_id"`
	Type           string          `db:"type"`
	State          string          `db:"state"`
	Description    string          `db:"description"`
	Stage          string          `db:"stage"`
	FinishedStages []string        `db:"finished_stages"`
	ErrorMessage   string          `db:"error_message"`
	Deadline       time.Time       `db:"deadline"`
	Data           json.RawMessage `db:"data"`
	// Temporary marks a deprovisioning that suspends the instance: the
	// runtime is removed, the instance stays.
	Temporary  bool       `db:"temporary"`
	JobID      *int64     `db:"job_id"`
	WokenAt    *time.Time `db:"woken_at"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	FinishedAt *time.Time `db:"finished_at"`
}

// InProgress reports whether the operation has not finished yet.
func (o Operation) InProgress() bool { return o.State == StateInProgress }

// ArchivedInstance is what is kept of an instance after deprovisioning.
type ArchivedInstance struct {
	InstanceID              string    `db:"instance_id"`
	RuntimeID               string    `db:"runtime_id"`
	GlobalAccountID         string    `db:"global_account_id"`
	SubAccountID            string    `db:"subaccount_id"`
	PlanID                  string    `db:"plan_id"`
	PlanName                string    `db:"plan_name"`
	PlatformRegion          string    `db:"platform_region"`
	Provider                string    `db:"provider"`
	ProviderRegion          string    `db:"provider_region"`
	ShootName               string    `db:"shoot_name"`
	ProvisioningState       string    `db:"provisioning_state"`
	LastDeprovisioningID    string    `db:"last_deprovisioning_id"`
	InstanceCreatedAt       time.Time `db:"instance_created_at"`
	DeprovisioningStartedAt time.Time `db:"deprovisioning_started_at"`
	ArchivedAt              time.Time `db:"archived_at"`
}
