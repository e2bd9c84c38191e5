package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// runtimeIdentityStore keeps the first runtime ID and cluster ID chosen for
// an instance, so a step re-run after a crash reuses them.
type runtimeIdentityStore interface {
	SetRuntimeIdentity(ctx context.Context, instanceID string, proposed storage.RuntimeIdentity) (storage.RuntimeIdentity, error)
}

// Initialization applies the plan's defaults, names the runtime and decides
// its Kyma version.
type Initialization struct {
	Catalog *catalog.Catalog
	Store   runtimeIdentityStore
	KCP     client.Reader
	// VersionPins reads the Kyma version pins (kyma.NewVersionPins); nil
	// reads them with KCP.
	VersionPins client.Reader
	// Seen lists the Runtime CRs the control-plane watch has seen, so that
	// looking for the instance's existing one costs no request; nil, or no
	// watch running, lists them with KCP.
	Seen   process.SeenLister
	Config Config
}

// Name implements process.Step.
func (s *Initialization) Name() string { return "initialization" }

// SharesCheckpoint implements process.SharedCheckpoint: the runtime identity
// is kept by the instance row (a re-run gets the first one back), and a Kyma
// version a re-run resolves differently (a pin changed in between) reaches
// the Runtime and Kyma CRs through their steps' re-runs, which converge them
// on the record.
func (s *Initialization) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step.
func (s *Initialization) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Preparing the runtime: applying plan defaults")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	// The broker resolved the plan's defaults when it accepted the request
	// and stored them in the operation: resolving again here would let a
	// plans.yaml change in between give the instance one provider or region
	// and the runtime another. Only a resumption (accepted by an update,
	// which resolves nothing) resolves here, for the new runtime it builds.
	if !op.Record.Resolved() {
		res, err := s.Catalog.Resolve(op.Instance.PlanID, op.Instance.PlatformRegion, params)
		if err != nil {
			return process.Fail("resolving plan defaults: %v", err)
		}
		op.Record.SetResolved(res)
	}
	runtimeID := uuid.NewString()
	if op.Instance.RuntimeID == "" {
		// A Runtime CR of this instance that the database does not know (it
		// was restored from a backup taken before the CR's runtime ID was
		// saved) is this runtime: adopting it keeps the instance at one
		// runtime. A stored identity still wins (SetRuntimeIdentity).
		existing, err := s.existingRuntimeID(ctx, op.InstanceID)
		if err != nil {
			return process.StepResult{}, err
		}
		if existing != "" {
			runtimeID = existing
		}
	}
	id, err := s.Store.SetRuntimeIdentity(ctx, op.InstanceID, storage.RuntimeIdentity{
		RuntimeID: runtimeID, ClusterID: uuid.NewString(), ShootName: ShootName(runtimeID)})
	if err != nil {
		return process.StepResult{}, err
	}
	pins := s.VersionPins
	if pins == nil {
		pins = s.KCP
	}
	version, err := kyma.ResolveVersion(ctx, pins, op.Instance.GlobalAccountID, params.KymaVersion,
		s.Config.OnDemandVersion, s.Config.DefaultKymaVersion)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("resolving Kyma version: %w", err)
	}
	// Later steps read the identity from the instance (see process.Operation);
	// the record keeps a copy for operators reading this operation.
	op.Instance.RuntimeID, op.Instance.ClusterID, op.Instance.ShootName = id.RuntimeID, id.ClusterID, id.ShootName
	d := &op.Record
	d.RuntimeID, d.ClusterID, d.ShootName, d.KymaVersion = id.RuntimeID, id.ClusterID, id.ShootName, version
	return process.Done()
}

// existingRuntimeID is the runtime ID of the instance's Runtime CR that is
// not being deleted, if there is one (a resumption's old runtime is gone or
// going by the time it runs).
func (s *Initialization) existingRuntimeID(ctx context.Context, instanceID string) (string, error) {
	var rts infrastructuremanager.RuntimeList
	opts := []client.ListOption{client.InNamespace(s.Config.Namespace), client.MatchingLabels{controlplane.LabelInstanceID: instanceID}}
	if s.Seen == nil || !s.Seen.SeenList(ctx, &rts, opts...) {
		if err := s.KCP.List(ctx, &rts, opts...); err != nil {
			return "", fmt.Errorf("looking for a Runtime CR of the instance: %w", err)
		}
	}
	for _, rt := range rts.Items {
		if id := rt.Labels[controlplane.LabelRuntimeID]; rt.DeletionTimestamp == nil && id != "" {
			return id, nil
		}
	}
	return "", nil
}

// ShootName names a runtime's cluster: short and DNS-safe, derived from the
// runtime ID so that a re-run names the same shoot.
func ShootName(runtimeID string) string {
	return "c-" + strings.ReplaceAll(runtimeID, "-", "")[:7]
}

// Parameters decodes the instance's stored (already validated) parameters.
func Parameters(op *process.Operation) (catalog.ProvisioningParameters, error) {
	var p catalog.ProvisioningParameters
	if len(op.Instance.Parameters) > 0 {
		// Written as integers since they are stored so; an instance accepted
		// before (20.0) is read as keb stores it now.
		if err := json.Unmarshal(catalog.WholeNumbers(op.Instance.Parameters), &p); err != nil {
			return p, fmt.Errorf("decoding stored parameters: %w", err)
		}
	}
	return p, nil
}
