package update_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// tenantAccounts hands every tenant its own account of a type, named after both.
type tenantAccounts struct{ claims []string }

func (p *tenantAccounts) Claim(_ context.Context, pool hyperscaler.Pool, tenant string) (hyperscaler.Account, error) {
	p.claims = append(p.claims, pool.Type+"/"+tenant)
	return hyperscaler.Account{Name: pool.Type + "-" + tenant}, nil
}

func (p *tenantAccounts) ClaimShared(_ context.Context, pool hyperscaler.Pool) (hyperscaler.Account, error) {
	p.claims = append(p.claims, pool.Type+"/shared")
	return hyperscaler.Account{Name: pool.Type + "-shared", Shared: true}, nil
}

func (p *tenantAccounts) TenantAccounts(_ context.Context, pool hyperscaler.Pool, tenant string) ([]string, error) {
	return []string{pool.Type + "-" + tenant}, nil
}

func (p *tenantAccounts) ClaimNew(ctx context.Context, pool hyperscaler.Pool, tenant string) (hyperscaler.Account, error) {
	return p.Claim(ctx, pool, tenant)
}

// recorder keeps what the success hook records.
type recorder struct{ updated []storage.Updated }

func (r *recorder) SetUpdated(_ context.Context, _ string, u storage.Updated) error {
	r.updated = append(r.updated, u)
	return nil
}

// trialRuntime writes the Runtime CR a trial provisioning made, Ready, with
// fields keb does not set (an image registry cache, the worker's container
// runtime, labels and taints) as an operator or the infrastructure manager
// would add them, and returns an update operation of it moving to plan (with
// parameters).
func trialRuntime(t *testing.T, c client.Client, ns, planName, params string) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, catalog.TrialPlanID)
	inst.RuntimeID, inst.ClusterID, inst.ShootName = uuid.NewString(), uuid.NewString(), "c-trial1"
	inst.PlatformRegion, inst.Provider, inst.ProviderRegion = "cf-eu10", "azure", "westeurope"
	inst.Parameters = json.RawMessage(`{"name":"trial-1"}`)
	inst.State = storage.RuntimeSucceeded
	inst.KymaRecord = storage.KymaRecord{KymaVersion: "2.20.0", KymaComponents: []string{"istio"}}
	rt := runtimetest.Runtime(ns, inst.RuntimeID)
	rt.Name = kyma.Name(inst.RuntimeID)
	rt.Labels[controlplane.LabelPlanName], rt.Labels[controlplane.LabelPlanID] = "trial", catalog.TrialPlanID
	rt.Spec.Shoot.Name, rt.Spec.Shoot.Purpose, rt.Spec.Shoot.SecretBindingName = inst.ShootName, "evaluation", "azure-shared"
	rt.Spec.Shoot.Kubernetes.Version = ptr("1.33")
	rt.Spec.ImageRegistryCache = &infrastructuremanager.ImageRegistryCache{Enabled: true}
	rt.Spec.Shoot.Provider.Workers = []infrastructuremanager.Worker{{Name: "cpu-worker-0",
		Machine: infrastructuremanager.Machine{Type: "Standard_D4s_v5", Image: &infrastructuremanager.ShootMachineImage{Name: "gardenlinux", Version: ptr("1592.1.0")}},
		Minimum: 1, Maximum: 1, Zones: []string{"1"}, Volume: &infrastructuremanager.Volume{Type: ptr("StandardSSD_LRS"), VolumeSize: "80Gi"},
		Labels: map[string]string{"team": "ops"}, Taints: []infrastructuremanager.Taint{{Key: "dedicated", Value: "kyma", Effect: "NoSchedule"}},
		CRI: &infrastructuremanager.CRI{Name: "containerd"}}}
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	runtimetest.SetStatus(t, c, rt, infrastructuremanager.StateReady, infrastructuremanager.ReasonShootCreationCompleted, "Shoot creation completed")
	op := processtest.Operation(storage.OperationTypeUpdate, inst)
	plan, _ := processtest.Catalog(t).PlanByName(planName)
	op.Request = &storage.UpdateRequest{PlanID: plan.ID, PlanName: plan.Name, Parameters: json.RawMessage(params)}
	provisionedKyma(t, c, op)
	return op
}

func ptr[T any](v T) *T { return &v }

func getRuntime(t *testing.T, c client.Client, ns string, op *process.Operation) *infrastructuremanager.Runtime {
	t.Helper()
	rt := &infrastructuremanager.Runtime{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: kyma.Name(op.Instance.RuntimeID)}, rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

func runStep(t *testing.T, s process.Step, op *process.Operation, want processtest.Outcome) process.StepResult {
	t.Helper()
	res, err := s.Run(t.Context(), op)
	processtest.MustOutcome(t, s.Name(), want, res, err)
	return res
}

// TestUpdatePlanTrialToAWS runs the update steps on a control-plane
// apiserver for a trial moving to aws with a larger autoscaler maximum.
func TestUpdatePlanTrialToAWS(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	ns := processtest.Namespace(t, c, "upd")
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Namespace = ns
	pool, rec := &tenantAccounts{}, &recorder{}
	pipe := update.Pipeline(update.Deps{Config: cfg, Catalog: processtest.Catalog(t), KCP: c, Accounts: pool, Store: rec})
	steps := map[string]process.Step{}
	for _, s := range pipe.Steps {
		steps[s.Name()] = s
	}
	op := trialRuntime(t, c, ns, catalog.AWSPlanName, `{"name":"trial-1","region":"eu-central-1","autoScalerMax":5}`)

	runStep(t, steps["update_initialization"], op, processtest.Done)
	d := op.Record
	if d.Provider != "aws" || d.ProviderRegion != "eu-central-1" || d.MachineType != "mi.large" || d.AutoScalerMin != 3 ||
		d.AutoScalerMax != 5 || d.KymaVersion != "2.20.0" || d.HyperscalerSecret != "azure-shared" {
		t.Fatalf("resolved %+v", d)
	}
	runStep(t, steps["update_hyperscaler_account"], op, processtest.Done)
	if want := "aws-" + op.Instance.GlobalAccountID; op.Record.HyperscalerSecret != want || !slices.Equal(pool.claims, []string{"aws/" + op.Instance.GlobalAccountID}) {
		t.Fatalf("account %s (claims %v), want the tenant's own aws account %s", op.Record.HyperscalerSecret, pool.claims, want)
	}

	before := getRuntime(t, c, ns, op)
	runStep(t, steps["update_runtime"], op, processtest.Done)
	rt := getRuntime(t, c, ns, op)
	w := rt.Spec.Shoot.Provider.Workers[0]
	if rt.Spec.Shoot.Provider.Type != "aws" || rt.Spec.Shoot.Region != "eu-central-1" || w.Machine.Type != "m7i.large" ||
		w.Minimum != 3 || w.Maximum != 5 || len(w.Zones) != 3 || w.MaxSurge.IntValue() != 3 ||
		*rt.Spec.Shoot.Kubernetes.Version != "1.33" || rt.Spec.Shoot.SecretBindingName != op.Record.HyperscalerSecret ||
		rt.Labels["kyma-project.io/broker-plan-name"] != "aws" || rt.Labels["kyma-project.io/region"] != "eu-central-1" ||
		rt.Spec.Shoot.Purpose != "development" {
		t.Fatalf("Runtime CR after update_runtime: %+v, labels %v", rt.Spec, rt.Labels)
	}
	// What keb does not set survives: the image registry cache, the
	// worker's image, disk type, container runtime, labels and taints.
	if rt.Spec.ImageRegistryCache == nil || !rt.Spec.ImageRegistryCache.Enabled || w.CRI == nil || w.CRI.Name != "containerd" ||
		w.Labels["team"] != "ops" || len(w.Taints) != 1 || *w.Machine.Image.Version != "1592.1.0" || *w.Volume.Type != "StandardSSD_LRS" {
		t.Fatalf("fields keb does not set were lost: %s", processtest.MustJSON(t, rt.Spec))
	}
	if wr := op.Record.RuntimeWrite; wr == nil || wr.Generation != rt.Generation || rt.Generation != before.Generation+1 {
		t.Fatalf("recorded write %+v, CR at generation %d (was %d)", wr, rt.Generation, before.Generation)
	}
	write := *op.Record.RuntimeWrite
	runStep(t, steps["update_runtime"], op, processtest.Done)
	if again := getRuntime(t, c, ns, op); again.ResourceVersion != rt.ResourceVersion || *op.Record.RuntimeWrite != write {
		t.Fatalf("a re-run wrote the CR again (resourceVersion %s, was %s) or recorded another write", again.ResourceVersion, rt.ResourceVersion)
	}

	// Ready as written: the infrastructure manager has not taken the
	// change up yet.
	res := runStep(t, steps["check_runtime_update"], op, processtest.Retry)
	if res.RetryAfter != cfg.RuntimePoll || processtest.MissingFrom(op.Description, "c-trial1", "not taken up yet") != "" {
		t.Errorf("waiting: %+v, %q", res, op.Description)
	}
	runtimetest.SetStatus(t, c, rt, infrastructuremanager.StatePending, infrastructuremanager.ReasonProcessing, "Shoot update is in progress")
	runStep(t, steps["check_runtime_update"], op, processtest.Retry)
	if processtest.MissingFrom(op.Description, "Pending", "Shoot update is in progress") != "" {
		t.Errorf("description %q does not say Pending with the condition's message", op.Description)
	}
	runtimetest.SetStatus(t, c, rt, infrastructuremanager.StateReady, infrastructuremanager.ReasonConfigurationCompleted, "done")
	runStep(t, steps["check_runtime_update"], op, processtest.Done)

	runStep(t, steps["update_kyma"], op, processtest.Done)
	k := &kyma.Kyma{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, k); err != nil {
		t.Fatal(err)
	}
	if k.Labels[controlplane.LabelPlanName] != "aws" || k.Labels[controlplane.LabelPlanID] != catalog.AWSPlanID {
		t.Errorf("Kyma CR labels %v", k.Labels)
	}
	runStep(t, steps["update_btp_manager_credentials"], op, processtest.Done)

	if err := pipe.Succeeded(t.Context(), op); err != nil {
		t.Fatal(err)
	}
	if len(rec.updated) != 1 {
		t.Fatalf("recorded %d updates", len(rec.updated))
	}
	u := rec.updated[0]
	var resolved map[string]any
	_ = json.Unmarshal(u.ResolvedParameters, &resolved)
	if u.PlanName != "aws" || u.Provider != "aws" || u.ProviderRegion != "eu-central-1" || string(u.Parameters) != string(op.Request.Parameters) ||
		resolved["autoScalerMax"] != 5.0 || resolved["machineType"] != "mi.large" || u.Action == nil ||
		u.Action.OldValue != "trial" || u.Action.NewValue != "aws" || u.Action.OperationID != op.ID {
		t.Errorf("recorded %+v (action %+v), resolved %v", u, u.Action, resolved)
	}
	if op.Record.Conclusion != "Operation succeeded: the runtime moved from plan trial to plan aws" {
		t.Errorf("conclusion %q", op.Record.Conclusion)
	}
}

// TestUpdateFailures: what ends an update for good, leaving nothing recorded.
func TestUpdateFailures(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	ns := processtest.Namespace(t, c, "upd-fail")
	// trialRuntime applies the Kyma CR in kcp-system: the test must not
	// depend on another test having created it first.
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Namespace = ns
	rec := &recorder{}
	pipe := update.Pipeline(update.Deps{Config: cfg, Catalog: processtest.Catalog(t), KCP: c, Accounts: &tenantAccounts{}, Store: rec})
	step := func(name string) process.Step {
		i := slices.IndexFunc(pipe.Steps, func(s process.Step) bool { return s.Name() == name })
		return pipe.Steps[i]
	}

	t.Run("the infrastructure manager fails the change", func(t *testing.T) {
		op := trialRuntime(t, c, ns, catalog.TrialPlanName, `{"name":"trial-1","administrators":["admin2@example.com"]}`)
		runStep(t, step("update_initialization"), op, processtest.Done)
		runStep(t, step("update_runtime"), op, processtest.Done)
		rt := getRuntime(t, c, ns, op)
		if !slices.Equal(rt.Spec.Security.Administrators, []string{"admin2@example.com"}) {
			t.Fatalf("administrators %v", rt.Spec.Security.Administrators)
		}
		// Failed is waited through (the infrastructure manager retries
		// Gardener errors) until the step's timeout, showing why.
		runtimetest.SetStatus(t, c, rt, infrastructuremanager.StateFailed, infrastructuremanager.ReasonGardenerError, "quota exceeded")
		runStep(t, step("check_runtime_update"), op, processtest.Retry)
		if processtest.MissingFrom(op.Description, "Failed", "GardenerErr", "quota exceeded") != "" {
			t.Errorf("description %q", op.Description)
		}
	})
	t.Run("an external licence: egress no longer filtered", func(t *testing.T) {
		op := trialRuntime(t, c, ns, catalog.TrialPlanName, `{"name":"trial-1","administrators":["x@example.com"]}`)
		op.Instance.Context = json.RawMessage(`{"license_type":"PARTNER"}`)
		runStep(t, step("update_initialization"), op, processtest.Done)
		runStep(t, step("update_runtime"), op, processtest.Done)
		if rt := getRuntime(t, c, ns, op); rt.Spec.Security.Networking.Filter.Egress.Enabled {
			t.Errorf("egress filter still on for an instance with an external licence")
		}
	})
	t.Run("the Runtime CR is gone", func(t *testing.T) {
		op := trialRuntime(t, c, ns, catalog.TrialPlanName, `{"name":"trial-1"}`)
		op.Instance.RuntimeID = uuid.NewString()
		runStep(t, step("update_initialization"), op, processtest.Failure)
	})
	t.Run("credentials only: the runtime steps do nothing", func(t *testing.T) {
		op := trialRuntime(t, c, ns, catalog.TrialPlanName, `{}`)
		op.Request = nil
		for _, name := range []string{"update_initialization", "update_hyperscaler_account", "update_runtime", "check_runtime_update", "update_kyma"} {
			runStep(t, step(name), op, processtest.Done)
		}
		if err := pipe.Succeeded(t.Context(), op); err != nil || op.Record.RuntimeWrite != nil {
			t.Fatalf("success hook: %v, data %+v", err, op.Record)
		}
	})
	if len(rec.updated) != 0 {
		t.Errorf("failed or credential-only updates recorded %+v", rec.updated)
	}
}
