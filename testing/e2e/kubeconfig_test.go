package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrasim"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// kubeconfigGet fetches /kubeconfig/{id} with the given headers only.
func (s *stack) kubeconfigGet(id string, headers map[string]string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+"/kubeconfig/"+id, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, raw
}

// TestPeoplesKubeconfig: GET /kubeconfig of a runtime whose Runtime CR has
// two OIDC providers has two users and the runtime's server; the instance's
// labels link to it; 404 while provisioning, after a failed provisioning,
// while suspended and for an unknown instance.
func TestPeoplesKubeconfig(t *testing.T) {
	simFaults = func(rt *im.Runtime) *infrasim.Fault {
		if rt.Labels[controlplane.LabelSubAccountID] == "sa-kc-broken" {
			return &infrasim.Fault{Message: "simulated Gardener error: quota exceeded", Permanent: true}
		}
		return nil
	}
	t.Cleanup(func() { simFaults = nil })
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		c.Engine.RuntimeTimeout = 15 * time.Second
		c.KubeconfigAllowOrigins = []string{"https://cockpit.example"}
	})
	freshAccount(t, s.kcp, "azure-kc-1")
	freshAccount(t, s.kcp, "azure-kc-broken")
	freshAccount(t, s.kcp, "azure-kc-list")
	tok, err := s.key.Mint(testIssuer, testAud, "proxy", []string{auth.ScopeKubeconfigRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	withToken := map[string]string{"Authorization": "Bearer " + tok}
	notFound := func(id, says string) {
		t.Helper()
		code, _, raw := s.kubeconfigGet(id, withToken)
		var body map[string]string
		_ = json.Unmarshal(raw, &body)
		if code != http.StatusNotFound || body["error"] != "NotFound" || !strings.Contains(body["description"], says) {
			t.Fatalf("GET /kubeconfig/%s: %d %s, want 404 saying %q", id, code, raw, says)
		}
	}
	provision := func(id, tenant string) string {
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
			"context": {"globalaccount_id": "ga-`+tenant+`", "subaccount_id": "sa-`+tenant+`", "user_id": "me@example.com"},
			"parameters": {"name": "`+tenant+`", "region": "westeurope"}}`)
		return s.accepted("provision "+id, code, body)
	}
	good, broken := provision("e2e-kc-1", "kc-1"), provision("e2e-kc-broken", "kc-broken")
	// The oidc parameter's list form: two providers, which provisioning
	// writes into additionalOidcConfig.
	provider := func(issuer, client string) string {
		return `{"clientID": "` + client + `", "issuerURL": "` + issuer + `", "groupsClaim": "groups", "usernameClaim": "sub",
			"usernamePrefix": "-", "groupsPrefix": "-", "signingAlgs": ["RS256"]}`
	}
	code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/e2e-kc-list?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "ga-kc-list", "subaccount_id": "sa-kc-list", "user_id": "me@example.com"},
		"parameters": {"name": "kc-list", "region": "westeurope", "oidc": {"list": [`+
			provider("https://list-a.example", "list-a")+`, `+provider("https://list-b.example", "list-b")+`]}}}`)
	listed := s.accepted("provision e2e-kc-list", code, body)
	notFound("e2e-kc-1", "being provisioned")
	notFound("e2e-kc-unknown", "does not exist")

	var wg sync.WaitGroup
	var brokenState string
	wg.Go(func() { brokenState, _ = s.waitFor("e2e-kc-broken", broken, 3*time.Minute) })
	if state, desc := s.waitFor("e2e-kc-1", good, 3*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	runtimeID := s.runtime("e2e-kc-1")["runtimeID"].(string)
	if state, desc := s.waitFor("e2e-kc-list", listed, 3*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning with the oidc list ended %s: %s", state, desc)
	}
	if code, _, raw := s.kubeconfigGet("e2e-kc-list", withToken); code != http.StatusOK ||
		!bytes.Contains(raw, []byte("--oidc-issuer-url=https://list-a.example")) || !bytes.Contains(raw, []byte("--oidc-client-id=list-b")) ||
		!bytes.Contains(raw, []byte("name: kc-list-2")) {
		t.Fatalf("kubeconfig of a runtime provisioned with two OIDC providers: %d\n%s", code, raw)
	}
	s.checkProvisioningEvents("e2e-kc-1", good)

	// Two OIDC providers, as KIM holds them: oidcConfig and
	// additionalOidcConfig (which repeats the first, as a list written
	// through both fields would).
	patch := `{"spec":{"shoot":{"kubernetes":{"kubeAPIServer":{
		"oidcConfig":{"clientID":"client-a","issuerURL":"https://issuer-a.example","signingAlgs":["RS256"]},
		"additionalOidcConfig":[{"clientID":"client-a","issuerURL":"https://issuer-a.example","signingAlgs":["RS256"]},
			{"clientID":"client-b","issuerURL":"https://issuer-b.example","signingAlgs":["RS256"]}]}}}}}`
	rt := &im.Runtime{}
	rt.Name, rt.Namespace = runtimeID, kcpNS
	if err := s.kcp.Patch(t.Context(), rt, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := s.kcp.Get(t.Context(), client.ObjectKey{Namespace: kcpNS, Name: im.KubeconfigSecretName(runtimeID)}, secret); err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.Load(secret.Data[im.KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	server := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster].Server

	code, header, raw := s.kubeconfigGet("e2e-kc-1", withToken)
	if code != http.StatusOK || header.Get("Content-Type") != "application/x-yaml" ||
		header.Get("Content-Disposition") != `attachment; filename="kubeconfig.yaml"` {
		t.Fatalf("GET /kubeconfig: %d %v %s", code, header, raw)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatalf("kubectl cannot read it: %v\n%s", err, raw)
	}
	if len(cfg.AuthInfos) != 2 || cfg.Clusters["kc-1"] == nil || cfg.Clusters["kc-1"].Server != server ||
		cfg.AuthInfos["kc-1"].Exec.Args[1] != "--oidc-issuer-url=https://issuer-a.example" ||
		cfg.AuthInfos["kc-1-2"].Exec.Args[2] != "--oidc-client-id=client-b" {
		t.Fatalf("kubeconfig: want users kc-1 (issuer a) and kc-1-2 (client b) on %s:\n%s", server, raw)
	}
	// keb kubeconfig finds the runtime by its shoot and writes the same file.
	cliToken, err := s.key.Mint(testIssuer, testAud, "operator", []string{auth.ScopeCLDRead, auth.ScopeKubeconfigRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kc-1.yaml")
	shoot := s.runtime("e2e-kc-1")["shootName"].(string)
	if out, err := exec.Command(buildKeb(t), "kubeconfig", "--url", s.url, "--token", cliToken, "-c", shoot, "-o", file).CombinedOutput(); err != nil {
		t.Fatalf("keb kubeconfig -c %s: %v\n%s", shoot, err, out)
	}
	if written, err := os.ReadFile(file); err != nil || !bytes.Equal(written, raw) {
		t.Fatalf("keb kubeconfig wrote %s (%v), the API served %s", written, err, raw)
	}
	if out, err := exec.Command(buildKeb(t), "kubeconfig", "--url", s.url, "--token", cliToken, "-g", "ga-no-such").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "no runtime matches") {
		t.Fatalf("keb kubeconfig of no runtime: %v %s", err, out)
	}

	// keb events shows the provisioning step by step, with what each step took.
	out, err := exec.Command(buildKeb(t), "events", "--url", s.url, "--token", cliToken, "-i", "e2e-kc-1").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^\S+ \S+\s+\S+\s+provision\s+step_done\s+create_runtime\s+[0-9.]+(ms|s)\s`).Match(out) ||
		!regexp.MustCompile(`(?m)\soperation_succeeded\s+-\s+[0-9.]+(ms|s|m[0-9]+s)\s`).Match(out) {
		t.Fatalf("keb events -i e2e-kc-1: %v\n%s", err, out)
	}

	// The cockpit's browser, without a token.
	code, header, _ = s.kubeconfigGet("e2e-kc-1", map[string]string{"Origin": "https://cockpit.example"})
	if code != http.StatusOK || header.Get("Access-Control-Allow-Origin") != "https://cockpit.example" {
		t.Fatalf("from the allowed origin: %d %v", code, header)
	}
	if code, _, _ := s.kubeconfigGet("e2e-kc-1", map[string]string{"Origin": "https://evil.example"}); code != http.StatusUnauthorized {
		t.Fatalf("from another origin without a token: %d", code)
	}

	// The instance's labels link to it.
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/e2e-kc-1", "")
	labels, _ := inst["metadata"].(map[string]any)["labels"].(map[string]any)
	if code != http.StatusOK || labels["Name"] != "kc-1" || labels["APIServerURL"] != server ||
		!strings.HasSuffix(labels["KubeconfigURL"].(string), "/kubeconfig/e2e-kc-1") {
		t.Fatalf("labels: %d %v", code, inst["metadata"])
	}

	wg.Wait()
	if brokenState != "failed" {
		t.Fatalf("the broken runtime's provisioning ended %s", brokenState)
	}
	notFound("e2e-kc-broken", "failed")

	code, body = s.call(http.MethodPatch, "/oauth/v2/service_instances/e2e-kc-1?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "context": {"active": false}}`)
	if state, desc := s.waitFor("e2e-kc-1", s.accepted("suspend", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("suspension ended %s: %s", state, desc)
	}
	notFound("e2e-kc-1", "suspended")
}

// checkProvisioningEvents: GET /events for the instance lists its
// provisioning, in order: accepted, each step started and done (a step
// ends when the next starts), check_runtime's wait for the cluster, the
// success last.
func (s *stack) checkProvisioningEvents(instanceID, opID string) {
	s.t.Helper()
	code, _, raw := s.send(http.MethodGet, "/events?instance_ids="+instanceID, "")
	var list []struct {
		Kind, Step, OperationID, Message string
		CreatedAt                        time.Time
	}
	if err := json.Unmarshal(raw, &list); code != http.StatusOK || err != nil || len(list) < 4 {
		s.t.Fatalf("GET /events: %d %v %s", code, err, raw)
	}
	if list[0].Kind != "operation_accepted" || list[len(list)-1].Kind != "operation_succeeded" {
		s.t.Fatalf("events do not run from acceptance to success: %s", raw)
	}
	var started []string
	running, waited := "", false
	for i, e := range list {
		if e.OperationID != opID || (i > 0 && e.CreatedAt.Before(list[i-1].CreatedAt)) {
			s.t.Fatalf("event %d out of place: %+v", i, e)
		}
		switch e.Kind {
		case "step_started":
			if running != "" {
				s.t.Fatalf("step %s started while %s had not ended: %s", e.Step, running, raw)
			}
			running = e.Step
			started = append(started, e.Step)
		case "step_waiting":
			waited = waited || e.Step == "check_runtime"
		case "step_done":
			if e.Step != running {
				s.t.Fatalf("step %s ended while %s ran", e.Step, running)
			}
			running = ""
		}
	}
	order := strings.Join(started, " ")
	if !strings.Contains(order, "create_runtime check_runtime") || !waited {
		s.t.Fatalf("steps %s (check_runtime waited: %v)", order, waited)
	}
	s.t.Logf("events of %s: %d, steps %s", instanceID, len(list), order)
}
