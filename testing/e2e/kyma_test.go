package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// provisionWithModules provisions an azure runtime with the given modules
// parameter and returns the operation.
func (s *stack) provisionWithModules(instanceID, tenant, modules string) string {
	s.t.Helper()
	code, body := s.call(http.MethodPut, "/oauth/cf-eu20/v2/service_instances/"+instanceID+"?accepts_incomplete=true", `{
		"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "`+tenant+`", "subaccount_id": "sa-`+tenant+`", "user_id": "owner@example.com",
			"sm_operator_credentials": {"clientid": "cid", "clientsecret": "csecret", "sm_url": "https://sm.example.com",
				"url": "https://auth.example.com", "xsappname": "app"}},
		"parameters": {"name": "`+instanceID+`", "region": "westeurope", "modules": `+modules+`}}`)
	return s.accepted("provision "+instanceID, code, body)
}

// waitKymaState polls GET /runtimes until the runtime shows kymaState.
func (s *stack) waitKymaState(instanceID, want string, within time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		rt := s.runtime(instanceID)
		if rt["kymaState"] == want {
			return rt
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("runtime %s shows kymaState %v after %s, want %s", instanceID, rt["kymaState"], within, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// console reads a console page with a cld:read token cookie.
func (s *stack) console(path string) string {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "keb_console_token", Value: s.token})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		s.t.Fatalf("console %s: %d %s", path, res.StatusCode, b)
	}
	return string(b)
}

// metric returns the value of the /metrics line starting with series.
func (s *stack) metric(series string) (string, bool) {
	s.t.Helper()
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return v, true
		}
	}
	return "", false
}

// runtimeClient is a client of the runtime's API server.
func (s *stack) runtimeClient(runtimeID string) client.Client {
	s.t.Helper()
	rc, err := runtimeclient.NewCache(s.kcp, controlplane.Namespace, s.scheme, runtimeclient.Bounds{}).Client(s.t.Context(), runtimeID)
	if err != nil {
		s.t.Fatal(err)
	}
	return rc
}

// TestKymaInErrorShowsEverywhere: a runtime whose modules leave out
// btp-operator and name one Lifecycle Manager does not have is provisioned
// (the cluster is Ready and BTP Manager's Secret is in place: keb waits for
// no BtpOperator CRD no module installs, and creates no BtpOperator CR);
// Lifecycle Manager then puts its Kyma CR in Error, and GET instance,
// /info/runtimes (its kymaState and kyma_state filter), the console and
// /metrics all show it. Every Kyma CR keb wrote passes strict validation.
func TestKymaInErrorShowsEverywhere(t *testing.T) {
	s := newStack(t, infrasim.ModeDedicated, 0, func(c *config.Config) { c.MetricsCensusInterval = 100 * time.Millisecond })
	freshAccount(t, s.kcp, "azure-kyma-error")
	ctx := t.Context()
	const instanceID = "e2e-kyma-error"
	op := s.provisionWithModules(instanceID, "ga-kyma-error", `{"list": [{"name": "istio"}, {"name": "no-such-module"}]}`)
	if state, desc := s.waitFor(instanceID, op, 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	rt := s.waitKymaState(instanceID, "Error", time.Minute)
	runtimeID := rt["runtimeID"].(string)

	// No BtpOperator: the runtime does not even serve the kind; the Secret is there.
	rc := s.runtimeClient(runtimeID)
	err := rc.List(ctx, &btpmanager.BtpOperatorList{})
	if !meta.IsNoMatchError(err) {
		t.Errorf("listing BtpOperator CRs in the runtime: %v, want the kind not served", err)
	}
	if err := rc.Get(ctx, client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}, &corev1.Secret{}); err != nil {
		t.Errorf("the sap-btp-manager Secret: %v", err)
	}

	// GET instance, as the platform sees it.
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/"+instanceID, "")
	attrs, _ := inst["metadata"].(map[string]any)["attributes"].(map[string]any)
	if code != http.StatusOK || attrs["kymaState"] != "Error" ||
		!strings.Contains(attrs["kymaModules"].(string), `no-such-module: Error: module template for module "no-such-module" not found`) ||
		!strings.Contains(attrs["kymaModules"].(string), "istio: Ready") {
		t.Errorf("GET instance: %d metadata %v", code, inst["metadata"])
	}
	if _, ok := attrs["btpOperatorState"]; ok {
		t.Errorf("btpOperatorState %v shown for a runtime without the btp-operator module", attrs["btpOperatorState"])
	}

	// /info/runtimes: the filter finds it, and only under its state.
	for q, want := range map[string]int{"kyma_state=Error": 1, "kyma_state=error&plan=azure": 1, "kyma_state=Ready": 0} {
		code, body := s.call(http.MethodGet, "/info/runtimes?instance_id="+instanceID+"&"+q, "")
		if code != http.StatusOK || body["totalCount"] != float64(want) {
			t.Errorf("/info/runtimes?%s: %d totalCount %v, want %d", q, code, body["totalCount"], want)
		}
	}

	// The console: the list's Kyma column and filter, the instance's modules.
	page := s.console("/console?kyma_state=Error&instance_id=" + instanceID)
	if !strings.Contains(page, `<td class="kyma"><span class="state Error">Error</span></td>`) {
		t.Errorf("the console's runtimes page does not show the Kyma state:\n%s", page)
	}
	page = s.console("/console/instances/" + instanceID)
	for _, want := range []string{`<td id="kyma-state"><span class="state Error">Error</span>`,
		`<tr data-module="no-such-module"><td class="mono">no-such-module</td><td><span class="state Error">Error</span></td><td>module template for module &#34;no-such-module&#34; not found</td></tr>`,
		`<tr data-module="istio"><td class="mono">istio</td><td><span class="state Ready">Ready</span></td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the console's instance page lacks %s:\n%s", want, page)
		}
	}

	// /metrics counts it.
	series := `keb_runtimes_by_kyma_state{plan_id="` + azurePlanID + `",state="Error"}`
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, ok := s.metric(series); ok && v == "1" {
			break
		}
		if time.Now().After(deadline) {
			v, _ := s.metric(series)
			t.Fatalf("%s = %q, want 1", series, v)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// What keb wrote into the control plane, under the CRD's strict rules.
	k := &kyma.Kyma{}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeID)}, k); err != nil {
		t.Fatal(err)
	}
	if k.Annotations[controlplane.AnnotationSKRDomain] != rt["shootName"].(string)+".kyma.example.com" {
		t.Errorf("skr-domain annotation %q", k.Annotations[controlplane.AnnotationSKRDomain])
	}
	strictDryRun(t, k)
}

// TestAwaitKymaReady: with APP_PROVISIONING_AWAIT_KYMA_READY, a provisioning
// succeeds only once Lifecycle Manager reports the Kyma CR Ready (here after
// the btp-operator module's BtpOperator CR turned Ready), and one whose Kyma
// CR stays in Error fails at the step's timeout with the module's error.
func TestAwaitKymaReady(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		c.Engine.AwaitKymaReady, c.Engine.KymaTimeout = true, 20*time.Second
	})
	freshAccount(t, s.kcp, "azure-await-ok")
	freshAccount(t, s.kcp, "azure-await-bad")
	ok := s.provisionWithModules("e2e-await-ok", "ga-await-ok", `{"default": true}`)
	bad := s.provisionWithModules("e2e-await-bad", "ga-await-bad", `{"list": [{"name": "btp-operator"}, {"name": "no-such-module"}]}`)
	if state, desc := s.waitFor("e2e-await-ok", ok, 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning with the default modules ended %s: %s", state, desc)
	}
	rt := s.runtime("e2e-await-ok")
	if rt["kymaState"] != "Ready" {
		t.Errorf("succeeded with kymaState %v, want Ready", rt["kymaState"])
	}
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/e2e-await-ok", "")
	attrs, _ := inst["metadata"].(map[string]any)["attributes"].(map[string]any)
	if code != http.StatusOK || attrs["btpOperatorState"] != "Ready" {
		t.Errorf("GET instance: %d metadata %v, want btpOperatorState Ready", code, inst["metadata"])
	}
	state, desc := s.waitFor("e2e-await-bad", bad, 4*time.Minute)
	if state != "failed" || !strings.Contains(desc, "check_kyma timed out") ||
		!strings.Contains(desc, `module no-such-module: Error (module template for module "no-such-module" not found)`) {
		t.Errorf("provisioning with an unknown module ended %s: %s; want failed naming the module's error", state, desc)
	}
}

// TestKymaCRFieldsKebDoesNotSetSurvive: what an operator sets on a Kyma CR
// and keb does not (spec.skipMaintenanceWindows, a module's controller, a
// label) survives a parameter update (which leaves the Kyma CR as it is), a
// plan change (which patches the plan labels) and a Kyma upgrade (which
// patches spec.channel); after each, the CR as stored passes kubectl's
// strict server-side validation.
func TestKymaCRFieldsKebDoesNotSetSurvive(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.Engine.Orchestration.Poll = 200 * time.Millisecond })
	freshAccount(t, s.kcp, "azure-kyma-fields")
	op := newOperator(s)
	ctx := t.Context()
	const id = "e2e-kyma-fields"
	path := "/oauth/v2/service_instances/" + id + "?accepts_incomplete=true"
	code, body := s.call(http.MethodPut, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azureLitePlanID+`",
		"context": {"globalaccount_id": "ga-kyma-fields", "subaccount_id": "sa-kyma-fields", "user_id": "owner@example.com"},
		"parameters": {"name": "kyma-fields", "region": "westeurope"}}`)
	if state, desc := s.waitFor(id, s.accepted("provision", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	runtimeID := s.runtime(id)["runtimeID"].(string)
	key := client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeID)}

	// An operator sets what keb does not, as a field manager of its own.
	foreign := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"metadata": {"labels": {"team": "ops"}}, "spec": {"skipMaintenanceWindows": true,
		"modules": [{"name": "istio", "controller": "istio-ctrl"}]}}`), &foreign.Object); err != nil {
		t.Fatal(err)
	}
	foreign.SetGroupVersionKind(kyma.GroupVersion.WithKind(kyma.Kind))
	foreign.SetNamespace(key.Namespace)
	foreign.SetName(key.Name)
	if err := s.kcp.Apply(ctx, client.ApplyConfigurationFromUnstructured(foreign), client.FieldOwner("operator")); err != nil {
		t.Fatal(err)
	}
	survived := func(step string) *kyma.Kyma {
		t.Helper()
		k := &kyma.Kyma{}
		if err := s.kcp.Get(ctx, key, k); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(k.Spec.Modules, func(m kyma.Module) bool { return m.Name == "istio" })
		if !k.Spec.SkipMaintenanceWindows || i < 0 || k.Spec.Modules[i].ControllerName != "istio-ctrl" || k.Labels["team"] != "ops" ||
			len(k.Spec.Modules) != len(kyma.DefaultModules()) {
			t.Fatalf("after %s, what keb does not set was lost: labels %v spec %+v", step, k.Labels, k.Spec)
		}
		strictDryRun(t, k)
		return k
	}
	gen := survived("the operator's change").Generation

	code, body = s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "parameters": {"autoScalerMax": 7}}`)
	if state, desc := s.waitFor(id, s.accepted("update", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("parameter update ended %s: %s", state, desc)
	}
	if k := survived("a parameter update"); k.Generation != gen || k.Labels[controlplane.LabelPlanName] != "azure_lite" {
		t.Errorf("a parameter update changed the Kyma CR: generation %d (was %d), labels %v", k.Generation, gen, k.Labels)
	}

	code, body = s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`"}`)
	if state, desc := s.waitFor(id, s.accepted("plan change", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("plan change ended %s: %s", state, desc)
	}
	if k := survived("a plan change"); k.Labels[controlplane.LabelPlanName] != "azure" || k.Labels[controlplane.LabelPlanID] != azurePlanID {
		t.Errorf("plan labels after the plan change: %v", k.Labels)
	}

	upgrade := op.orchestrate("kyma", `{"targets": {"include": [{"runtimeID": "`+runtimeID+`"}]}, "kyma": {"version": "2.21.0", "channel": "fast"}}`)
	if got := op.wait(upgrade, 2*time.Minute); got.State != "succeeded" {
		t.Fatalf("Kyma upgrade: %+v", got)
	}
	if k := survived("a Kyma upgrade"); k.Spec.Channel != "fast" {
		t.Errorf("channel after the Kyma upgrade: %q, want fast", k.Spec.Channel)
	}
}

// strictDryRun holds k, without what the API server and Lifecycle Manager
// added, to `kubectl apply --dry-run=server --validate=strict`.
func strictDryRun(t *testing.T, k *kyma.Kyma) {
	t.Helper()
	u, err := kyma.ApplyObject(k)
	if err != nil {
		t.Fatal(err)
	}
	u.SetName(u.GetName() + "-dry-run")
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kcp.Kubectl(t, b, "apply", "--dry-run=server", "--validate=strict", "-f", "-"); err != nil {
		t.Errorf("the Kyma CR keb wrote is refused: %v\n%s", err, out)
	}
}
