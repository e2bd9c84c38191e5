// Package upgrade holds the steps of the upgrades orchestrations start on
// each runtime, one file per step: upgrade_kyma (the Kyma version and
// channel) and upgrade_cluster (Kubernetes version and machine image). Step
// names are persisted in operations' checkpoints: never rename one. A dry
// run walks the same steps and describes what they would change without
// writing any control-plane object.
package upgrade

import (
	"context"
	"encoding/json"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// Config holds the settings the upgrade steps read.
type Config struct {
	// Namespace is the control-plane namespace of Runtime and Kyma CRs.
	Namespace string
	// RuntimeTimeout bounds the wait for the infrastructure manager to
	// apply the change; RuntimePoll is how often it looks (a watch wakes
	// it sooner).
	RuntimeTimeout, RuntimePoll time.Duration
	// RuntimeGrace is how long a written change may leave no trace in a
	// Ready Runtime CR before it counts as applied (im.Write.Applied).
	RuntimeGrace time.Duration
}

// resolvedStore records what an upgrade changed in the instance's resolved
// parameters (what GET instance shows).
type resolvedStore interface {
	MergeResolvedParameters(ctx context.Context, instanceID string, patch json.RawMessage, kyma *storage.KymaRecord) error
}

// Deps are the parts the steps use.
type Deps struct {
	Config  Config
	Catalog *catalog.Catalog
	KCP     client.Client
	Store   resolvedStore
	// Watch is what the control-plane watch has seen of Runtime CRs; nil:
	// everything is read from KCP.
	Watch process.SeenReader
	// AVS sets the runtimes' AVS evaluations' status; nil: cluster upgrades
	// have no AVS maintenance steps (AVS is off, or
	// APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_DISABLED). Provisioning reads
	// which evaluations a runtime has, AVSExemptions which global accounts
	// keep theirs active.
	AVS           avsStatuses
	Provisioning  provisioningReader
	AVSExemptions avs.MaintenanceExemptions
}

// KymaPipeline returns the upgrade_kyma pipeline.
func KymaPipeline(d Deps) process.Pipeline {
	return process.Pipeline{
		Steps: []process.Step{
			&Initialisation{KCP: d.KCP, Config: d.Config},
			&Overrides{Catalog: d.Catalog, KCP: d.KCP, Config: d.Config},
			&UpgradeKyma{KCP: d.KCP, Config: d.Config},
			&AwaitRuntime{KCP: d.KCP, Watch: d.Watch, Config: d.Config},
		},
		Succeeded: recordUpgrade(d.Store),
		Done:      "Operation succeeded: Kyma is upgraded",
	}
}

// ClusterPipeline returns the upgrade_cluster pipeline.
func ClusterPipeline(d Deps) process.Pipeline {
	p := process.Pipeline{
		Steps: []process.Step{
			&Initialisation{KCP: d.KCP, Config: d.Config},
			&UpgradeCluster{KCP: d.KCP, Config: d.Config},
			&AwaitRuntime{KCP: d.KCP, Watch: d.Watch, Config: d.Config},
		},
		Succeeded: recordUpgrade(d.Store),
		Done:      "Operation succeeded: the cluster is upgraded",
	}
	if d.AVS != nil {
		// Maintenance around the change of the cluster, as upstream's
		// cluster upgrades; a failed upgrade restores it too.
		end := &AVSMaintenanceEnd{AVS: d.AVS}
		p.Steps = []process.Step{p.Steps[0],
			&AVSMaintenanceStart{AVS: d.AVS, Provisioning: d.Provisioning, Exemptions: d.AVSExemptions},
			p.Steps[1], p.Steps[2], end}
		p.Failed = end.RestoreAfterFailure
	}
	return p
}

// recordUpgrade writes the new versions into the instance's resolved
// parameters, and a Kyma upgrade's version and components into its Kyma
// record, so that GET instance and later updates and upgrades see them. A
// dry run records nothing.
func recordUpgrade(store resolvedStore) func(ctx context.Context, op *process.Operation) error {
	return func(ctx context.Context, op *process.Operation) error {
		u := op.Record.Upgrade
		if u == nil || u.DryRun {
			if u != nil {
				op.Conclude("Operation succeeded: dry run, no resource was changed")
			}
			return nil
		}
		var kyma *storage.KymaRecord
		if op.Type == storage.OperationTypeUpgradeKyma {
			kyma = kymaRecord(op)
		}
		patch := map[string]string{}
		for k, v := range map[string]string{"kymaChannel": u.KymaChannel,
			"kubernetesVersion": u.KubernetesVersion, "machineImage": u.MachineImage,
			"machineImageVersion": u.MachineImageVersion} {
			if v != "" {
				patch[k] = v
			}
		}
		if len(patch) == 0 && kyma == nil {
			return nil
		}
		raw, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		return store.MergeResolvedParameters(ctx, op.InstanceID, raw, kyma)
	}
}
