package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrasim"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/testing/k8stest"
)

const azureLitePlanID = "8cb22518-aa26-44c5-91a0-e669ec9bf443"

// strictApply applies the Runtime CR as it is stored with `kubectl apply
// --dry-run=server --validate=strict`: the CRD must accept what keb wrote.
func (s *stack) strictApply(runtimeID string) {
	s.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(im.GroupVersion.WithKind("Runtime"))
	if err := s.kcp.Get(s.t.Context(), client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeID)}, u); err != nil {
		s.t.Fatal(err)
	}
	obj := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "labels": u.GetLabels()},
		"spec":     u.Object["spec"]}
	doc, err := json.Marshal(obj)
	if err != nil {
		s.t.Fatal(err)
	}
	bin, err := k8stest.BinDir()
	if err != nil {
		s.t.Fatal(err)
	}
	kubeconfig := filepath.Join(s.t.TempDir(), "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "--validate=strict",
		"--server-side", "--field-manager", "e2e-check", "--force-conflicts", "-f", "-")
	cmd.Stdin = bytes.NewReader(doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("kubectl apply --dry-run=server --validate=strict of the Runtime CR keb wrote: %v\n%s", err, out)
	}
}

// TestRuntimeCRFieldsKebDoesNotSetSurvive: fields of the Runtime CR that keb
// does not set (the image registry cache, the Kyma worker pool's container
// runtime, labels and taints), added by an operator, survive a parameter
// update, a plan change, a Kyma upgrade and a cluster upgrade, each of which
// changes what it should; after each, the CR as stored passes kubectl's
// strict server-side validation.
func TestRuntimeCRFieldsKebDoesNotSetSurvive(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.Engine.Orchestration.Poll = 200 * time.Millisecond })
	freshAccount(t, s.kcp, "azure-fields")
	op := newOperator(s)
	ctx := t.Context()
	const id = "e2e-fields"
	path := "/oauth/v2/service_instances/" + id + "?accepts_incomplete=true"
	code, body := s.call(http.MethodPut, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azureLitePlanID+`",
		"context": {"globalaccount_id": "ga-fields", "subaccount_id": "sa-fields", "user_id": "owner@example.com"},
		"parameters": {"name": "fields", "region": "westeurope", "networking": {"nodes": "10.180.0.0/16"}}}`)
	if state, desc := s.waitFor(id, s.accepted("provision", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	runtimeID := s.runtime(id)["runtimeID"].(string)
	key := client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeID)}
	s.strictApply(runtimeID)
	if rt := s.runtimeCR(runtimeID); rt.Spec.Shoot.Networking.Nodes != "10.180.0.0/16" || rt.Labels["kyma-project.io/region"] != "westeurope" {
		t.Fatalf("the Runtime CR as provisioned: %+v, labels %v", rt.Spec.Shoot.Networking, rt.Labels)
	}

	// An operator adds what keb does not set, and the infrastructure
	// manager applies it.
	before := s.runtimeCR(runtimeID)
	operatorPatch := `[{"op": "add", "path": "/spec/imageRegistryCache", "value": {"enabled": true}},
		{"op": "add", "path": "/spec/shoot/provider/workers/0/cri", "value": {"name": "containerd"}},
		{"op": "add", "path": "/spec/shoot/provider/workers/0/labels", "value": {"team": "ops"}},
		{"op": "add", "path": "/spec/shoot/provider/workers/0/taints", "value": [{"key": "dedicated", "value": "kyma", "effect": "NoSchedule"}]}]`
	gen := before.Generation
	if err := s.kcp.Patch(ctx, before, client.RawPatch(types.JSONPatchType, []byte(operatorPatch))); err != nil {
		t.Fatal(err)
	}
	s.waitRuntimeReady(runtimeID, gen+1)
	survived := func(step string) *im.Runtime {
		t.Helper()
		rt := &im.Runtime{}
		if err := s.kcp.Get(ctx, key, rt); err != nil {
			t.Fatal(err)
		}
		w := rt.Spec.Shoot.Provider.Workers[0]
		if rt.Spec.ImageRegistryCache == nil || !rt.Spec.ImageRegistryCache.Enabled || w.CRI == nil || w.CRI.Name != "containerd" ||
			w.Labels["team"] != "ops" || len(w.Taints) != 1 || w.Taints[0].Key != "dedicated" {
			t.Fatalf("after %s, fields keb does not set were lost: %+v", step, rt.Spec)
		}
		s.strictApply(runtimeID)
		return rt
	}
	survived("the operator's change")

	// A parameter update.
	code, body = s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "parameters": {"autoScalerMax": 7}}`)
	if state, desc := s.waitFor(id, s.accepted("update", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("parameter update ended %s: %s", state, desc)
	}
	if rt := survived("a parameter update"); rt.Spec.Shoot.Provider.Workers[0].Maximum != 7 {
		t.Errorf("the update did not set the maximum: %+v", rt.Spec.Shoot.Provider.Workers[0])
	}

	// A plan change: azure_lite to azure.
	code, body = s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`"}`)
	if state, desc := s.waitFor(id, s.accepted("plan change", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("plan change ended %s: %s", state, desc)
	}
	if rt := survived("a plan change"); rt.Labels[controlplane.LabelPlanName] != "azure" || rt.Labels[controlplane.LabelPlanID] != azurePlanID {
		t.Errorf("plan labels after the plan change: %v", rt.Labels)
	}

	// A Kyma upgrade: keb's records change, the Runtime CR does not.
	gen = survived("nothing").Generation
	upgrade := op.orchestrate("kyma", `{"targets": {"include": [{"runtimeID": "`+runtimeID+`"}]}, "kyma": {"version": "2.21.0"}}`)
	if got := op.wait(upgrade, 2*time.Minute); got.State != "succeeded" {
		t.Fatalf("Kyma upgrade: %+v", got)
	}
	if rt := survived("a Kyma upgrade"); rt.Generation != gen {
		t.Errorf("a Kyma upgrade changed the Runtime CR's spec (generation %d, was %d)", rt.Generation, gen)
	}
	if _, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/"+id, ""); inst["parameters"].(map[string]any)["kymaVersion"] != "2.21.0" {
		t.Errorf("GET instance after the Kyma upgrade: %v", inst)
	}

	// A cluster upgrade.
	upgrade = op.orchestrate("cluster", `{"targets": {"include": [{"runtimeID": "`+runtimeID+`"}]},
		"kubernetes": {"version": "1.33.1", "machineImage": "gardenlinux", "machineImageVersion": "1592.2.0"}}`)
	if got := op.wait(upgrade, 2*time.Minute); got.State != "succeeded" {
		t.Fatalf("cluster upgrade: %+v", got)
	}
	rt := survived("a cluster upgrade")
	img := rt.Spec.Shoot.Provider.Workers[0].Machine.Image
	if v := rt.Spec.Shoot.Kubernetes.Version; v == nil || *v != "1.33.1" || img == nil || img.Name != "gardenlinux" || *img.Version != "1592.2.0" {
		t.Errorf("after the cluster upgrade: Kubernetes %v, image %+v", v, img)
	}
}

// waitRuntimeReady waits until the infrastructure manager reports the
// Runtime Ready with a transition after its spec reached generation.
func (s *stack) waitRuntimeReady(runtimeID string, generation int64) {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	sawPending := false
	for time.Now().Before(deadline) {
		rt := s.runtimeCR(runtimeID)
		sawPending = sawPending || rt.Status.State == im.StatePending
		if rt.Generation >= generation && rt.Status.State == im.StateReady && sawPending {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	rt := s.runtimeCR(runtimeID)
	s.t.Fatalf("the Runtime of %s did not apply generation %d within a minute (saw Pending: %v): at generation %d, status %+v",
		runtimeID, generation, sawPending, rt.Generation, rt.Status)
}

// TestRuntimeFaults: the infrastructure manager fails a cluster with a
// Gardener error. A transient one: the provisioning shows the condition's
// message in last_operation while it lasts and succeeds after the recovery.
// A permanent one: the provisioning fails when check_runtime's timeout
// passes, with that message.
func TestRuntimeFaults(t *testing.T) {
	const transient, permanent = "simulated Gardener error: the cloud provider throttled the request; retrying",
		"simulated Gardener error: quota exceeded for machine type Standard_D2s_v5 in region westeurope"
	simFaults = func(rt *im.Runtime) *infrasim.Fault {
		switch rt.Labels[controlplane.LabelSubAccountID] {
		case "sa-flaky":
			return &infrasim.Fault{Message: transient, Duration: 6 * time.Second}
		case "sa-broken":
			return &infrasim.Fault{Message: permanent, Permanent: true}
		}
		return nil
	}
	t.Cleanup(func() { simFaults = nil })
	// The flaky runtime's 6 s fault must end well inside the timeout on a loaded machine
	// (25 s was not enough when the walkthrough's stacks ran beside this suite).
	const timeout = 60 * time.Second
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.Engine.RuntimeTimeout = timeout })
	freshAccount(t, s.kcp, "azure-flaky")
	freshAccount(t, s.kcp, "azure-broken")

	provision := func(id, tenant string) string {
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
			"context": {"globalaccount_id": "ga-`+tenant+`", "subaccount_id": "sa-`+tenant+`", "user_id": "me@example.com"},
			"parameters": {"name": "`+tenant+`", "region": "westeurope"}}`)
		return s.accepted("provision "+id, code, body)
	}
	flaky, broken := provision("e2e-flaky", "flaky"), provision("e2e-broken", "broken")

	// Both wait while Failed, showing why, as the platform polls.
	var mu sync.Mutex
	seen := map[string][]string{} // the distinct descriptions, in order
	watch := func(id, opID string) (string, string) {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			code, body := s.call(http.MethodGet, "/oauth/v2/service_instances/"+id+"/last_operation?operation="+opID, "")
			if code != http.StatusOK {
				t.Errorf("last_operation of %s: %d %v", id, code, body)
				return "", ""
			}
			desc, _ := body["description"].(string)
			if body["state"] != "in progress" {
				return body["state"].(string), desc
			}
			mu.Lock()
			if l := seen[id]; len(l) == 0 || l[len(l)-1] != desc {
				seen[id] = append(l, desc)
			}
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
		}
		t.Errorf("%s did not end within 3 minutes", id)
		return "", ""
	}
	var wg sync.WaitGroup
	var flakyState, brokenState, brokenDesc string
	wg.Go(func() { flakyState, _ = watch("e2e-flaky", flaky) })
	wg.Go(func() { brokenState, brokenDesc = watch("e2e-broken", broken) })
	wg.Wait()
	contains := func(descs []string, text string) bool {
		for _, d := range descs {
			if strings.Contains(d, "Failed, GardenerErr: "+text) {
				return true
			}
		}
		return false
	}
	if flakyState != "succeeded" || !contains(seen["e2e-flaky"], transient) {
		t.Errorf("transient fault: ended %s; descriptions seen %q", flakyState, seen["e2e-flaky"])
	}
	if brokenState != "failed" || !strings.Contains(brokenDesc, "check_runtime timed out after "+timeout.String()) ||
		!strings.Contains(brokenDesc, "Failed, GardenerErr: "+permanent) || !contains(seen["e2e-broken"], permanent) {
		t.Errorf("permanent fault: ended %s with %q; descriptions seen %q", brokenState, brokenDesc, seen["e2e-broken"])
	}
}
