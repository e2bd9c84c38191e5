package update_test

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// kymaSettings open beta modules to plan aws, none to trial.
var kymaSettings = kyma.Settings{ShootDomain: "kyma.example.com", Beta: kyma.Audience{Plans: []string{"aws"}}}

// provisionedKyma creates op's Kyma CR as provisioning did: the instance's
// plan, its recorded region, its modules.
func provisionedKyma(t *testing.T, c client.Client, op *process.Operation) {
	t.Helper()
	params, err := provisioning.Parameters(op)
	if err != nil {
		t.Fatal(err)
	}
	in := provisioning.KymaInput(op, params)
	in.Region = op.Instance.ProviderRegion
	if err := kyma.Apply(t.Context(), c, kyma.NewKyma(in, kymaSettings)); err != nil {
		t.Fatal(err)
	}
}

func getKyma(t *testing.T, c client.Client, op *process.Operation) *kyma.Kyma {
	t.Helper()
	k := &kyma.Kyma{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestUpdateKymaRewritesOnlyWhatThePlanChangeChanges: a plan change patches
// the plan labels (and the beta label the settings give the new plan);
// whatever else is on the Kyma CR (Lifecycle Manager's and operators'
// fields, keb's other labels) stays as it was, and a change of parameters
// alone writes nothing.
func TestUpdateKymaRewritesOnlyWhatThePlanChangeChanges(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Namespace = processtest.Namespace(t, c, "upd-kyma")
	cfg.Kyma = kymaSettings
	step := &update.UpdateKyma{KCP: c, Config: cfg}

	op := trialRuntime(t, c, cfg.Namespace, catalog.AWSPlanName, `{"name":"trial-1","region":"eu-central-1"}`)
	op.Record.ProviderRegion = "eu-central-1"
	// An operator's fields, set as its own field manager.
	foreign := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"metadata":{"labels":{"team":"a"}},"spec":{"skipMaintenanceWindows":true,`+
		`"modules":[{"name":"istio","controller":"istio-ctrl"}]}}`), &foreign.Object); err != nil {
		t.Fatal(err)
	}
	foreign.SetGroupVersionKind(kyma.GroupVersion.WithKind(kyma.Kind))
	foreign.SetNamespace(controlplane.Namespace)
	foreign.SetName(kyma.Name(op.Instance.RuntimeID))
	if err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(foreign), client.FieldOwner("operator")); err != nil {
		t.Fatal(err)
	}
	before := getKyma(t, c, op)

	runStep(t, step, op, processtest.Done)
	after := getKyma(t, c, op)
	want := map[string]string{
		controlplane.LabelPlanName: "aws", controlplane.LabelPlanID: catalog.AWSPlanID,
		controlplane.LabelBeta: "true", controlplane.LabelRegion: "eu-central-1", "team": "a",
		controlplane.LabelInstanceID: op.InstanceID, controlplane.LabelRuntimeID: op.Instance.RuntimeID,
	}
	for k, v := range want {
		if after.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, after.Labels[k], v)
		}
	}
	if processtest.MissingFrom(op.Description, "aws") != "" {
		t.Errorf("description %q does not name the new plan", op.Description)
	}
	istio := slices.IndexFunc(after.Spec.Modules, func(m kyma.Module) bool { return m.Name == "istio" })
	if !after.Spec.SkipMaintenanceWindows || istio < 0 || after.Spec.Modules[istio].ControllerName != "istio-ctrl" {
		t.Errorf("the operator's fields are gone: %s", processtest.MustJSON(t, after.Spec))
	}
	if processtest.MustJSON(t, after.Spec) != processtest.MustJSON(t, before.Spec) ||
		after.Annotations[controlplane.AnnotationSKRDomain] != before.Annotations[controlplane.AnnotationSKRDomain] {
		t.Errorf("spec or annotations changed:\n before %s\n after  %s", processtest.MustJSON(t, before.Spec), processtest.MustJSON(t, after.Spec))
	}

	// A re-run (after a crash) and a change of parameters alone write nothing.
	rv := after.ResourceVersion
	op.Instance.PlanID, op.Instance.PlanName, op.Instance.ProviderRegion = catalog.AWSPlanID, catalog.AWSPlanName, "eu-central-1"
	op.Instance.Parameters = op.Request.Parameters
	op.Request.Parameters = json.RawMessage(`{"name":"trial-1","region":"eu-central-1","autoScalerMax":6}`)
	runStep(t, step, op, processtest.Done)
	if got := getKyma(t, c, op).ResourceVersion; got != rv {
		t.Errorf("a parameter update rewrote the Kyma CR (resourceVersion %s → %s)", rv, got)
	}
}

// TestUpdateKymaWithoutKymaCR fails: there is nothing to update, and
// creating a Kyma CR is provisioning's job.
func TestUpdateKymaWithoutKymaCR(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Kyma = kymaSettings
	op := newOp(t, nil)
	op.Request = &storage.UpdateRequest{PlanID: catalog.AWSPlanID, PlanName: catalog.AWSPlanName, Parameters: json.RawMessage(`{"name":"x"}`)}
	res, err := (&update.UpdateKyma{KCP: c, Config: cfg}).Run(t.Context(), op)
	processtest.MustOutcome(t, "update_kyma", processtest.Failure, res, err)
}
