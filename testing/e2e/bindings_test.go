package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	osb "sigs.k8s.io/go-open-service-broker-client/v2"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/testing/apitest"
	"github.com/kyma-keb/keb/testing/k8stest"
)

func bindingPath(instanceID, bindingID string) string {
	return "/oauth/v2/service_instances/" + instanceID + "/service_bindings/" + bindingID
}

func bindBody(params string) string {
	s := `{"service_id": "` + serviceID + `", "plan_id": "` + azurePlanID + `"`
	if params != "" {
		s += `, "parameters": ` + params
	}
	return s + `}`
}

// kubeconfigOf is the kubeconfig in a binding answer's credentials.
func kubeconfigOf(t *testing.T, body map[string]any) string {
	t.Helper()
	creds, _ := body["credentials"].(map[string]any)
	kc, _ := creds["kubeconfig"].(string)
	meta, _ := body["metadata"].(map[string]any)
	if kc == "" || creds["expires_at"] == nil || meta["expires_at"] != creds["expires_at"] {
		t.Fatalf("no kubeconfig and expiry (in credentials and OSB 2.17's metadata) in %v", body)
	}
	return kc
}

var openAPI = sync.OnceValues(apitest.Load)

// checked sends an OSB request like call, and fails the test unless the
// answer is what docs/openapi.yaml documents.
func (s *stack) checked(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	code, text := s.raw(method, path, body)
	var out map[string]any
	_ = json.Unmarshal([]byte(text), &out)
	return code, out
}

// raw sends a request and returns the status and body text, checked
// against docs/openapi.yaml.
func (s *stack) raw(method, path, body string) (int, string) {
	s.t.Helper()
	code, header, b := s.send(method, path, body)
	doc, err := openAPI()
	if err != nil {
		s.t.Fatal(err)
	}
	p, _, _ := strings.Cut(path, "?")
	if err := doc.Check(method, p, code, header.Get("Content-Type"), b); err != nil {
		s.t.Errorf("answer not as documented: %v", err)
	}
	return code, string(b)
}

// TestBindings binds runtimes on the real stack: the runtimes share one real
// apiserver (shared mode), so that a deprovisioned runtime's apiserver is
// still there to prove its bindings' ServiceAccounts were removed, not just
// switched off with the cluster.
func TestBindings(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		c.Binding.MaxPerInstance = 3
		// Short lifetimes for the expiry check; the token the API server
		// issues lives 10 minutes, so the prune job's removal of the
		// ServiceAccount is what ends it.
		c.Binding.MinExpiration = 2 * time.Second
		c.Binding.PruneInterval = time.Second
	})
	// An account of its own: the deprovisioning below leaves it dirty.
	freshAccount(t, s.kcp, "azure-bindings")
	const id = "e2e-bind-1"

	// The catalog offers bindings on paid plans only.
	code, cat := s.checked(http.MethodGet, "/oauth/v2/catalog", "")
	svc := cat["services"].([]any)[0].(map[string]any)
	if code != http.StatusOK || svc["bindable"] != false || svc["bindings_retrievable"] != true {
		t.Fatalf("catalog service: %d %v", code, svc)
	}
	for _, p := range svc["plans"].([]any) {
		plan := p.(map[string]any)
		// A plan without "bindable" takes the service's false.
		if want := plan["name"] != "trial"; (plan["bindable"] == true) != want {
			t.Errorf("plan %s: bindable %v, want %v", plan["name"], plan["bindable"], want)
		}
	}

	// Not before the runtime is there.
	code, body := s.checked(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "ga-bind", "subaccount_id": "sa-bind", "user_id": "me@example.com"},
		"parameters": {"name": "bind"}}`)
	provOp := s.accepted("provision", code, body)
	if code, body := s.checked(http.MethodPut, bindingPath(id, "early"), bindBody("")); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(body["description"]), "being provisioned") {
		t.Fatalf("bind while provisioning: %d %v", code, body)
	}
	if state, desc := s.waitFor(id, provOp, 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}

	// The upstream OSB client binds, gets the binding and unbinds.
	cl := s.osbClient()
	bound, err := cl.Bind(&osb.BindRequest{BindingID: "osb-1", InstanceID: id, ServiceID: serviceID, PlanID: azurePlanID,
		Parameters: map[string]any{"expiration_seconds": 1200}})
	if err != nil || bound.Async {
		t.Fatalf("OSB client bind: %+v %v", bound, err)
	}
	kubeconfig, _ := bound.Credentials["kubeconfig"].(string)
	expiresAt, err := time.Parse(time.RFC3339, fmt.Sprint(bound.Credentials["expires_at"]))
	if kubeconfig == "" || err != nil || expiresAt.Before(time.Now().Add(19*time.Minute)) || expiresAt.After(time.Now().Add(21*time.Minute)) {
		t.Fatalf("bind credentials: expires_at %v (%v), kubeconfig %d bytes", bound.Credentials["expires_at"], err, len(kubeconfig))
	}
	if err := k8stest.ListNamespaces(context.Background(), kubeconfig); err != nil {
		t.Fatalf("the bound kubeconfig cannot list namespaces in the runtime: %v", err)
	}
	got, err := cl.GetBinding(&osb.GetBindingRequest{InstanceID: id, BindingID: "osb-1"})
	if err != nil || got.Credentials["kubeconfig"] != kubeconfig || got.Parameters["expiration_seconds"] != float64(1200) {
		t.Fatalf("OSB client get binding: %+v %v", got, err)
	}
	// A DELETE naming another plan or service than the instance's was meant
	// for another instance's binding (issue 23, defect 8): 400, and the
	// binding keeps working.
	const trialPlanID = "7d55d31d-35ae-4438-bf13-6ffdfa107d9f"
	for _, q := range []string{"service_id=" + serviceID + "&plan_id=" + trialPlanID, "service_id=bogus&plan_id=bogus"} {
		if code, body := s.checked(http.MethodDelete, bindingPath(id, "osb-1")+"?"+q, ""); code != http.StatusBadRequest {
			t.Fatalf("unbind naming %s: %d %v", q, code, body)
		}
	}
	if err := k8stest.ListNamespaces(context.Background(), kubeconfig); err != nil {
		t.Fatalf("a refused unbind removed the binding: %v", err)
	}
	// A bind body spelling a field in another case is refused (defect 7):
	// the hidden expiration would have been used.
	if code, body := s.checked(http.MethodPut, bindingPath(id, "variant"), `{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+
		`", "parameters": {"expiration_seconds": 600}, "PARAMETERS": {"expiration_seconds": 7200}}`); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(body["description"]), "PARAMETERS") {
		t.Fatalf("bind with a case-variant field: %d %v", code, body)
	}
	if _, err := cl.Unbind(&osb.UnbindRequest{InstanceID: id, BindingID: "osb-1", ServiceID: serviceID, PlanID: azurePlanID}); err != nil {
		t.Fatalf("OSB client unbind: %v", err)
	}
	k8stest.WaitRefused(t, "after unbind", kubeconfig)
	if _, err := cl.GetBinding(&osb.GetBindingRequest{InstanceID: id, BindingID: "osb-1"}); err == nil {
		t.Fatal("get binding after unbind succeeded")
	}
	unbindPath := bindingPath(id, "osb-1") + "?service_id=" + serviceID + "&plan_id=" + azurePlanID
	if code, text := s.raw(http.MethodDelete, unbindPath, ""); code != http.StatusGone || strings.TrimSpace(text) != "{}" {
		t.Fatalf("unbind of an unknown binding: %d %s", code, text)
	}

	// Identical PUT: 200 with the same binding; different: 409.
	code, first := s.checked(http.MethodPut, bindingPath(id, "b1"), bindBody(""))
	if code != http.StatusCreated {
		t.Fatalf("bind b1: %d %v", code, first)
	}
	if code, again := s.checked(http.MethodPut, bindingPath(id, "b1"), bindBody("{}")); code != http.StatusOK ||
		kubeconfigOf(t, again) != kubeconfigOf(t, first) {
		t.Fatalf("identical PUT: %d %v", code, again)
	}
	if code, body := s.checked(http.MethodPut, bindingPath(id, "b1"), bindBody(`{"expiration_seconds": 900}`)); code != http.StatusConflict {
		t.Fatalf("different PUT: %d %v", code, body)
	}
	if code, body := s.checked(http.MethodPut, bindingPath(id, "b9"), bindBody(`{"expiration_seconds": 1}`)); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(body["description"]), "expiration_seconds") {
		t.Fatalf("expiration below the minimum: %d %v", code, body)
	}
	if code, body := s.checked(http.MethodPut, bindingPath("no-such-instance", "b9"), bindBody("")); code != http.StatusNotFound {
		t.Fatalf("bind of an unknown instance: %d %v", code, body)
	}

	// Asynchronous: 202, last_operation, then GET.
	code, body = s.checked(http.MethodPut, bindingPath(id, "async")+"?accepts_incomplete=true", bindBody(""))
	op := s.accepted("async bind", code, body)
	state := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && state != "succeeded"; time.Sleep(300 * time.Millisecond) {
		code, lo := s.checked(http.MethodGet, bindingPath(id, "async")+"/last_operation?operation="+op, "")
		if code != http.StatusOK || lo["state"] == "failed" {
			t.Fatalf("binding last_operation: %d %v", code, lo)
		}
		state, _ = lo["state"].(string)
	}
	code, asyncBinding := s.checked(http.MethodGet, bindingPath(id, "async"), "")
	if code != http.StatusOK || k8stest.ListNamespaces(context.Background(), kubeconfigOf(t, asyncBinding)) != nil {
		t.Fatalf("GET of the async binding (%s): %d %v", state, code, asyncBinding)
	}

	// The limit (3 here): b1, async, and one that expires in 2 s.
	code, short := s.checked(http.MethodPut, bindingPath(id, "short"), bindBody(`{"expiration_seconds": 2}`))
	if code != http.StatusCreated {
		t.Fatalf("bind short: %d %v", code, short)
	}
	if code, body := s.checked(http.MethodPut, bindingPath(id, "b4"), bindBody("")); code != http.StatusBadRequest ||
		!strings.Contains(fmt.Sprint(body["description"]), "APP_BROKER_BINDING_MAX_PER_INSTANCE=3") {
		t.Fatalf("fourth binding: %d %v", code, body)
	}
	// The prune job removes the expired binding from the runtime.
	k8stest.WaitRefused(t, "after expiry", kubeconfigOf(t, short))
	if code, body := s.checked(http.MethodGet, bindingPath(id, "short"), ""); code != http.StatusNotFound {
		t.Fatalf("GET of an expired binding: %d %v", code, body)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if n := len(s.runtimeBindings(id)); n == 2 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d bindings listed after pruning, want 2", n)
		}
	}
	if code, body := s.checked(http.MethodPut, bindingPath(id, "b4"), bindBody("")); code != http.StatusCreated {
		t.Fatalf("bind after expiry freed a slot: %d %v", code, body)
	}

	// Operators see the bindings, never their credentials.
	code, listing := s.raw(http.MethodGet, "/runtimes?instance_id="+id+"&bindings=true", "")
	if code != http.StatusOK || strings.Contains(listing, "kubeconfig") || strings.Contains(listing, "token") ||
		!strings.Contains(listing, `"id":"b4"`) {
		t.Fatalf("/runtimes?bindings=true: %d %s", code, listing)
	}

	// Deprovisioning removes every binding from the runtime (whose
	// apiserver lives on here) before the runtime goes.
	kept := []string{kubeconfigOf(t, first), kubeconfigOf(t, asyncBinding)}
	code, body = s.checked(http.MethodDelete, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, "")
	deprovOp := s.accepted("deprovision", code, body)
	if code, body := s.checked(http.MethodPut, bindingPath(id, "late"), bindBody("")); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(body["description"]), "being deprovisioned") {
		t.Fatalf("bind while deprovisioning: %d %v", code, body)
	}
	if state, desc := s.waitFor(id, deprovOp, 4*time.Minute); state != "succeeded" && state != "gone" {
		t.Fatalf("deprovisioning ended %s: %s", state, desc)
	}
	for i, kc := range kept {
		k8stest.WaitRefused(t, fmt.Sprintf("binding %d after deprovisioning", i), kc)
	}
}

// runtimeBindings lists an instance's bindings as /runtimes?bindings=true shows them.
func (s *stack) runtimeBindings(instanceID string) []any {
	s.t.Helper()
	code, body := s.checked(http.MethodGet, "/runtimes?instance_id="+instanceID+"&bindings=true", "")
	data, _ := body["data"].([]any)
	if code != http.StatusOK || len(data) != 1 {
		s.t.Fatalf("/runtimes?bindings=true: %d %v", code, body)
	}
	bs, ok := data[0].(map[string]any)["bindings"].([]any)
	if !ok {
		s.t.Fatalf("no bindings list: %v", data[0])
	}
	return bs
}

// TestBindingSuspendedInstance: a suspension removes the bindings with the
// runtime, and a suspended instance cannot be bound.
func TestBindingSuspendedInstance(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0)
	// An account of its own: the suspended instance keeps it.
	freshAccount(t, s.kcp, "azure-bindings-suspend")
	const id = "e2e-bind-2"
	s.provisionAzure(id, "ga-bind-2")
	code, bound := s.checked(http.MethodPut, bindingPath(id, "b1"), bindBody(""))
	if code != http.StatusCreated {
		t.Fatalf("bind: %d %v", code, bound)
	}
	code, body := s.checked(http.MethodPatch, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "context": {"active": false}}`)
	if state, desc := s.waitFor(id, s.accepted("suspend", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("suspension ended %s: %s", state, desc)
	}
	k8stest.WaitRefused(t, "after suspension", kubeconfigOf(t, bound))
	if n := len(s.runtimeBindings(id)); n != 0 {
		t.Fatalf("%d bindings listed after suspension", n)
	}
	if code, body := s.checked(http.MethodPut, bindingPath(id, "b2"), bindBody("")); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(body["description"]), "suspended") {
		t.Fatalf("bind a suspended instance: %d %v", code, body)
	}
}
