// Package crash kills a keb replica with SIGKILL while it works and checks
// that every operation still finishes exactly once. It runs real processes:
// two `keb serve` replicas on one PostgreSQL and one control plane.
package crash

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/runtime"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	kcpNS       = "kcp-system"
	poolNS      = "garden-kyma-dev"
	instances   = 100
)

var (
	kcp    *k8stest.Environment
	kebBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "keb-crash-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kebBin = filepath.Join(dir, "keb")
	build := exec.Command("go", "build", "-o", kebBin, "github.com/kyma-keb/keb/cmd/keb")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building keb:", err)
		os.Exit(1)
	}
	code := k8stest.Run(m, &kcp, pgtest.Run)
	os.RemoveAll(dir)
	os.Exit(code)
}

// replica is one `keb serve` process.
type replica struct {
	name string
	env  []string
	port int
	cmd  *exec.Cmd
	log  *os.File
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command(kebBin, "serve")
	r.cmd.Env = append(os.Environ(), append(r.env, fmt.Sprintf("APP_PORT=%d", r.port))...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", r.name, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready; see %s", r.name, r.log.Name())
}

func (r *replica) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
}

func (r *replica) stop() {
	if r.cmd == nil || r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		r.kill()
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestKilledReplicaLosesNothing provisions 100 runtimes over two replicas,
// kills one with SIGKILL mid-flight and restarts it. All 100 must succeed,
// with exactly one Runtime CR per instance and one pool account per tenant.
func TestKilledReplicaLosesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp := t.TempDir()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := client.New(kcp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{kcpNS, poolNS} {
		if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range instances {
		if err := kc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("azure-%03d", i), Namespace: poolNS,
			Labels: map[string]string{hyperscaler.LabelHyperscalerType: "azure"}}}); err != nil {
			t.Fatal(err)
		}
	}

	// The infrastructure manager runs in the test: one shared runtime
	// apiserver, and a delay so that operations are in flight at the kill.
	bin, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	silent := logrus.New()
	silent.SetOutput(io.Discard)
	sim, err := infrasim.New(kcp.Config, scheme, infrasim.Options{Namespace: kcpNS, Mode: infrasim.ModeShared, BinDir: bin, Delay: 3 * time.Second, Log: silent})
	if err != nil {
		t.Fatal(err)
	}
	simDone := make(chan struct{})
	go func() { _ = sim.Start(ctx); close(simDone) }()
	defer func() { cancel(); <-simDone }()

	// Auth: the replicas trust a PEM key whose private half signs our token.
	key, err := auth.LoadOrCreateDevKey(tmp)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(tmp, "issuer.pem")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	token, err := key.Mint("crash-test", "keb", "crash", []string{auth.ScopeBrokerWrite}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(tmp, "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"APP_HOST=127.0.0.1",
		"APP_DATABASE_URL=" + pgtest.NewDatabase(t),
		"APP_DATABASE_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"APP_AUTH_PUBLIC_KEY_FILES=" + pubFile,
		"APP_AUTH_ISSUER=crash-test", "APP_AUTH_AUDIENCE=keb",
		"APP_KCP_KUBECONFIG=" + kubeconfig,
		"APP_WORKERS=10",
		"APP_WORKER_JOB_TIMEOUT=10s", "APP_WORKER_RESCUE_AFTER=15s",
		"APP_PROVISIONING_RUNTIME_POLL=2s", "APP_PROVISIONING_BTP_MANAGER_POLL=1s",
		"APP_LOG_FORMAT=json", "APP_LOG_LEVEL=warn",
	}
	var reps []*replica
	for _, name := range []string{"replica-a", "replica-b"} {
		lf, err := os.Create(filepath.Join(tmp, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{name: name, env: env, port: freePort(t), log: lf}
		r.start(t)
		defer r.stop()
		reps = append(reps, r)
	}

	call := func(r *replica, method, path, body string) (int, map[string]any, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path), rd)
		req.Header.Set("X-Broker-API-Version", "2.17")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out, nil
	}

	ops := map[string]string{}
	for i := range instances {
		id := fmt.Sprintf("crash-%03d", i)
		body := fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"context":{"globalaccount_id":"ga-%03d","subaccount_id":"sa","user_id":"u@example.com",
			"sm_operator_credentials":{"clientid":"c","clientsecret":"s","sm_url":"https://sm","url":"https://auth"}},"parameters":{"name":"n%d"}}`,
			serviceID, azurePlanID, i, i)
		code, out, err := call(reps[i%2], http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", body)
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("provision %s: %d %v %v", id, code, out, err)
		}
		ops[id] = out["operation"].(string)
	}

	// Mid-flight: some operations done, most waiting or running.
	waitUntil(t, 2*time.Minute, func() bool { return countRuntimes(t, kc) >= 20 })
	reps[0].kill()
	t.Logf("killed %s with SIGKILL", reps[0].name)
	time.Sleep(2 * time.Second)
	reps[0].start(t)

	// Every operation succeeds, polled through either replica.
	var mu sync.Mutex
	pending := map[string]string{}
	for id, op := range ops {
		pending[id] = op
	}
	deadline := time.Now().Add(6 * time.Minute)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for id, op := range pending {
			code, out, err := call(reps[len(id)%2], http.MethodGet, "/oauth/v2/service_instances/"+id+"/last_operation?operation="+op, "")
			if err != nil || code != http.StatusOK {
				continue
			}
			switch out["state"] {
			case "succeeded":
				mu.Lock()
				delete(pending, id)
				mu.Unlock()
			case "failed":
				t.Fatalf("%s failed: %v", id, out["description"])
			}
		}
		time.Sleep(time.Second)
	}
	if len(pending) > 0 {
		for id, op := range pending {
			_, out, _ := call(reps[1], http.MethodGet, "/oauth/v2/service_instances/"+id+"/last_operation?operation="+op, "")
			t.Logf("still in progress: %s: %v", id, out["description"])
		}
		for _, r := range reps {
			b, _ := os.ReadFile(r.log.Name())
			lines := strings.Split(string(b), "\n")
			t.Logf("last lines of %s:\n%s", r.name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		t.Fatalf("%d operations still in progress after the kill", len(pending))
	}

	// Exactly one Runtime CR per instance, one pool account per tenant.
	var rts runtime.RuntimeList
	if err := kc.List(ctx, &rts, client.InNamespace(kcpNS)); err != nil {
		t.Fatal(err)
	}
	perInstance := map[string]int{}
	for _, rt := range rts.Items {
		perInstance[rt.Labels["kyma-project.io/instance-id"]]++
	}
	if len(rts.Items) != instances || len(perInstance) != instances {
		t.Fatalf("want %d Runtime CRs for %d instances, got %d for %d", instances, instances, len(rts.Items), len(perInstance))
	}
	var pool corev1.SecretList
	if err := kc.List(ctx, &pool, client.InNamespace(poolNS)); err != nil {
		t.Fatal(err)
	}
	perTenant := map[string]int{}
	for _, s := range pool.Items {
		if tenant := s.Labels[hyperscaler.LabelTenantName]; tenant != "" {
			perTenant[tenant]++
		}
	}
	for tenant, n := range perTenant {
		if n != 1 {
			t.Errorf("tenant %s holds %d accounts", tenant, n)
		}
	}
	if len(perTenant) != instances {
		t.Fatalf("want %d tenants with an account, got %d", instances, len(perTenant))
	}
}

func countRuntimes(t *testing.T, c client.Client) int {
	t.Helper()
	var rts runtime.RuntimeList
	if err := c.List(context.Background(), &rts, client.InNamespace(kcpNS)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range rts.Items {
		if rt.Status.State == runtime.StateReady {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("condition not met within %s", within)
}
