package provisioning

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// provisionedStore records what a finished provisioning produced.
type provisionedStore interface {
	SetProvisioned(ctx context.Context, instanceID string, p storage.Provisioned) error
}

// ResolvedParameters are the values a runtime was built with, as GET
// instance shows them (the shape of KEB's instance details): the request's
// parameters with every default applied. Never credentials: targetSecret
// names the hyperscaler account's Secret, it holds none of it.
type ResolvedParameters struct {
	Name           string   `json:"name"`
	Region         string   `json:"region"`
	ProviderRegion string   `json:"providerRegion,omitempty"`
	Provider       string   `json:"provider"`
	MachineType    string   `json:"machineType,omitempty"`
	AutoScalerMin  int      `json:"autoScalerMin"`
	AutoScalerMax  int      `json:"autoScalerMax"`
	Zones          []string `json:"zones"`
	TargetSecret   string   `json:"targetSecret,omitempty"`
	// EUAccess: the account (TargetSecret) is an EU-access one.
	EUAccess   bool     `json:"euAccess,omitempty"`
	Components []string `json:"components"`
	ShootName  string   `json:"shootName"`
	// MaintenanceWindowBegin and End are the runtime's daily maintenance
	// window, in upstream KEB's form ("0000-01-01T22:00:00Z").
	MaintenanceWindowBegin string `json:"maintenanceWindowBegin,omitempty"`
	MaintenanceWindowEnd   string `json:"maintenanceWindowEnd,omitempty"`

	// Today's optional parameters, as given (absent when not given).
	AdditionalWorkerNodePools *[]catalog.WorkerPool      `json:"additionalWorkerNodePools,omitempty"`
	OIDC                      *catalog.OIDC              `json:"oidc,omitempty"`
	Networking                *catalog.Networking        `json:"networking,omitempty"`
	IngressFiltering          *bool                      `json:"ingressFiltering,omitempty"`
	ColocateControlPlane      *bool                      `json:"colocateControlPlane,omitempty"`
	AccessControlList         *catalog.AccessControlList `json:"accessControlList,omitempty"`
	AdditionalVolumeSizeGi    *int                       `json:"additionalVolumeSizeGi,omitempty"`
	MaxSurge                  *int                       `json:"maxSurge,omitempty"`
	MaxUnavailable            *int                       `json:"maxUnavailable,omitempty"`
	VolumeSizeGb              *int                       `json:"volumeSizeGb,omitempty"`
}

// recordProvisioned is the provisioning pipeline's success hook: it stores
// the dashboard URL and the resolved parameters on the instance.
func recordProvisioned(store provisionedStore, cfg Config) func(ctx context.Context, op *process.Operation) error {
	return func(ctx context.Context, op *process.Operation) error {
		params, err := Parameters(op)
		if err != nil {
			return err
		}
		d := op.Record
		window := cfg.MaintenanceWindows.Resolve(op.Instance.PlanName, d.ProviderRegion)
		resolved, err := ResolvedJSON(op, params,
			maintenance.Timestamp(window.BeginClock()), maintenance.Timestamp(window.EndClock()))
		if err != nil {
			return err
		}
		return store.SetProvisioned(ctx, op.InstanceID, storage.Provisioned{
			ProviderRegion:         d.ProviderRegion,
			DashboardURL:           "https://console." + kyma.Domain(op.Instance.ShootName, cfg.Kyma.ShootDomain),
			Parameters:             resolved,
			MaintenanceWindowBegin: window.BeginClock(), MaintenanceWindowEnd: window.EndClock(),
			Kyma: KymaRecord(op),
		})
	}
}

// ResolvedJSON is the JSON of the ResolvedParameters an operation's runtime
// runs with: params with the values the operation's steps resolved.
func ResolvedJSON(op *process.Operation, params catalog.ProvisioningParameters, windowBegin, windowEnd string) (json.RawMessage, error) {
	d := op.Record
	zones := d.Zones
	if len(zones) == 0 {
		zones = params.Zones
	}
	resolved, err := json.Marshal(ResolvedParameters{
		Name: params.Name, Region: d.Region, ProviderRegion: d.ProviderRegion, Provider: d.Provider,
		MachineType: d.MachineType, AutoScalerMin: d.AutoScalerMin, AutoScalerMax: d.AutoScalerMax,
		Zones: zones, TargetSecret: d.HyperscalerSecret, EUAccess: d.HyperscalerEUAccess,
		Components: append([]string{}, params.Components...), ShootName: op.Instance.ShootName,
		MaintenanceWindowBegin: windowBegin, MaintenanceWindowEnd: windowEnd,
		AdditionalWorkerNodePools: params.AdditionalWorkerNodePools, OIDC: params.OIDC, Networking: params.Networking,
		IngressFiltering: params.IngressFiltering, ColocateControlPlane: params.ColocateControlPlane,
		AccessControlList: params.AccessControlList, AdditionalVolumeSizeGi: params.AdditionalVolumeSizeGi,
		MaxSurge: params.MaxSurge, MaxUnavailable: params.MaxUnavailable, VolumeSizeGb: params.VolumeSizeGb,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding resolved parameters: %w", err)
	}
	return resolved, nil
}

// KymaRecord is what an operation's record says the runtime runs of Kyma.
func KymaRecord(op *process.Operation) storage.KymaRecord {
	d := op.Record
	return storage.KymaRecord{KymaVersion: d.KymaVersion, KymaComponents: append([]string{}, d.Components...),
		OverridesSecret: d.OverridesSecret}
}
