package faults

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/lmsim"
	"github.com/kyma-keb/keb/internal/pgserver"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgha"
)

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	kcpNS       = "kcp-system"
	poolNS      = "garden-kyma-dev"
	secretKey   = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	appName     = "keb-replica"
)

// stackOptions shape one test's stack.
type stackOptions struct {
	replicas int
	accounts int           // dedicated azure accounts in the pool
	delay    time.Duration // the simulated infrastructure manager's delay
	env      []string      // extra APP_* settings of every replica
	// noCRDs starts a control plane without keb's CRDs (and no simulated
	// infrastructure manager); the replicas then start unready.
	noCRDs bool
	// ha runs a primary and a synchronous standby (testing/pgha) instead of
	// one PostgreSQL; the replicas get the multi-host URL.
	ha bool
	// bin is the keb binary the replicas run; "" is this tree's.
	bin string
}

// stack is one test's world: its own PostgreSQL, control plane, simulated
// infrastructure manager and keb replicas.
type stack struct {
	t          *testing.T
	dir        string
	pg         *pgserver.Server
	ha         *pgha.Cluster
	pgData     string
	dbURL      string
	db         *pgxpool.Pool
	kcp        *k8stest.Environment
	kc         client.Client
	token      string
	replicas   []*replica
	httpClient *http.Client
}

func newStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	// Stacks share nothing, so tests run beside each other (`make test`:
	// two at a time on two cores); `make faults` runs them one by one
	// (-parallel 1), where the timings they log are keb's, not the machine's.
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stack{t: t, dir: t.TempDir(), httpClient: &http.Client{Timeout: 2 * time.Minute}}
	silent := logrus.New()
	silent.SetOutput(io.Discard)

	// A test-owned PostgreSQL: the tests stop and freeze it.
	var err error
	if opts.ha {
		s.ha = pgha.Start(t)
		s.dbURL = s.ha.URL()
	} else {
		s.pgData = filepath.Join(s.dir, "pgdata")
		s.pg = startPostgres(ctx, t, s.pgData)
		t.Cleanup(func() { _ = s.pg.Stop(context.Background()) })
		s.dbURL = s.pg.URL
	}
	if s.db, err = pgxpool.New(ctx, s.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)

	var crds []*apiextensionsv1.CustomResourceDefinition // nil: all of keb's
	if opts.noCRDs {
		crds = []*apiextensionsv1.CustomResourceDefinition{}
	}
	if s.kcp, err = k8stest.Start(crds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.kcp.Stop() })
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if s.kc, err = client.New(s.kcp.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{kcpNS, poolNS} {
		if err := s.kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range opts.accounts {
		name := fmt.Sprintf("azure-%04d", i)
		for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, poolNS, name, "azure",
			map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: hyperscaler.TypeAzure}, nil) {
			if err := s.kc.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The infrastructure manager runs in the test, with one shared runtime
	// apiserver.
	t.Cleanup(cancel)
	if !opts.noCRDs {
		bin, err := k8stest.BinDir()
		if err != nil {
			t.Fatal(err)
		}
		sim, err := infrasim.New(s.kcp.Config, scheme, infrasim.Options{Namespace: kcpNS, Mode: infrasim.ModeShared, BinDir: bin,
			Delay: opts.delay, Log: silent, RuntimeCRDs: []*apiextensionsv1.CustomResourceDefinition{}})
		if err != nil {
			t.Fatal(err)
		}
		lm, err := lmsim.New(s.kcp.Config, scheme, lmsim.Options{Namespace: kcpNS, Log: silent})
		if err != nil {
			t.Fatal(err)
		}
		simDone := make(chan struct{}, 2)
		go func() { _ = sim.Start(ctx); simDone <- struct{}{} }()
		go func() { _ = lm.Start(ctx); simDone <- struct{}{} }()
		t.Cleanup(func() { cancel(); <-simDone; <-simDone })
	}

	// Auth: the replicas trust a PEM key whose private half signs our token.
	key, err := auth.LoadOrCreateDevKey(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(s.dir, "issuer.pem")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.token, err = key.Mint("faults", "keb", "faults", []string{auth.ScopeBrokerWrite, auth.ScopeCLDRead,
		auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite}, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(s.dir, "kcp.kubeconfig")
	if err := s.kcp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"APP_HOST=127.0.0.1",
		// Named, so that the tests can count the replicas' connections.
		"APP_DATABASE_URL=" + s.dbURL + "&application_name=" + appName,
		"APP_DATABASE_SECRET_KEY=" + secretKey,
		"APP_AUTH_PUBLIC_KEY_FILES=" + pubFile,
		"APP_AUTH_ISSUER=faults", "APP_AUTH_AUDIENCE=keb",
		"APP_KCP_KUBECONFIG=" + kubeconfig,
		"APP_WORKERS=10",
		"APP_WORKER_JOB_TIMEOUT=10s",
		"APP_PROVISIONING_RUNTIME_POLL=2s", "APP_PROVISIONING_BTP_MANAGER_POLL=1s", "APP_DEPROVISIONING_POLL=2s",
		"APP_LOG_FORMAT=json", "APP_LOG_LEVEL=info",
		// Binds abandoned in a database's gap are removed soon after their
		// deadline, so the tests see the runtime settle.
		"APP_BROKER_BINDING_PRUNE_INTERVAL=2s",
		// Nothing balances load before these replicas but in the rolling
		// restart, which sets its own.
		"APP_SHUTDOWN_DELAY=0s",
	}, opts.env...)
	for i := range max(opts.replicas, 1) {
		name := fmt.Sprintf("replica-%c", 'a'+i)
		lf, err := os.Create(filepath.Join(s.dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{name: name, bin: opts.bin, env: env, port: freePort(t), pprofPort: freePort(t), log: lf, unready: opts.noCRDs}
		r.start(t)
		t.Cleanup(r.stop)
		s.replicas = append(s.replicas, r)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range s.replicas {
				b, _ := os.ReadFile(r.log.Name())
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", r.name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
				// What net/http says (a recovered panic, a refused
				// connection) is not JSON and may be long before the end.
				var plain []string
				for _, l := range lines {
					if l != "" && !strings.HasPrefix(l, "{") && len(plain) < 60 {
						plain = append(plain, l)
					}
				}
				if len(plain) > 0 {
					t.Logf("%s's lines other than its JSON log:\n%s", r.name, strings.Join(plain, "\n"))
				}
			}
		}
	})
	return s
}

// startPostgres starts the stack's own PostgreSQL in dataDir: a
// descendant of the test binary, which procguard (TestMain) stops when the
// binary dies however it dies (TestRigPostgresDiesWithItsTestBinary).
func startPostgres(ctx context.Context, t *testing.T, dataDir string) *pgserver.Server {
	t.Helper()
	silent := logrus.New()
	silent.SetOutput(io.Discard)
	pg, err := pgserver.Start(ctx, pgserver.Options{DataDir: dataDir, Throwaway: true, Log: silent})
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	return pg
}

// replica is one `keb serve` process.
type replica struct {
	name string
	bin  string // "" is kebBin
	env  []string
	port int
	// pprofPort serves the replica's goroutines, which a test that waited
	// in vain reports.
	pprofPort int
	cmd       *exec.Cmd
	log       *os.File
	done      chan struct{}
	// unready: the replica is expected to start unready (503 on /readyz).
	unready bool
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	bin := r.bin
	if bin == "" {
		bin = kebBin
	}
	r.cmd = exec.Command(bin, "serve")
	r.cmd.Env = append(os.Environ(), append(r.env, fmt.Sprintf("APP_PORT=%d", r.port),
		fmt.Sprintf("APP_PPROF_ADDR=127.0.0.1:%d", r.pprofPort))...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", r.name, err)
	}
	r.done = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	waitFor(t, 90*time.Second, r.name+" ready", func() bool {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port))
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK || (r.unready && res.StatusCode == http.StatusServiceUnavailable)
	})
}

// serving lists the replica's goroutines that serve a request now (its
// pprof goroutine profile, stacks counted), at most a few kilobytes.
func (r *replica) serving() string {
	c := http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", r.pprofPort))
	if err != nil {
		return "  (no profile: " + err.Error() + ")"
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "  (no profile: " + err.Error() + ")"
	}
	var out []string
	for _, stack := range strings.Split(string(b), "\n\n") {
		if strings.Contains(stack, "net/http.serverHandler.ServeHTTP") && !strings.Contains(stack, "net/http/pprof.") {
			out = append(out, stack)
		}
	}
	text := strings.Join(out, "\n\n")
	if len(text) > 6000 {
		text = text[:6000] + "\n  …"
	}
	if text == "" {
		return "  none"
	}
	return text
}

// queueID is the replica's ID in the queue (river_job.attempted_by).
func (r *replica) queueID(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return process.ClientIDOf(host, r.cmd.Process.Pid)
}

func (r *replica) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path) }

func (r *replica) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

func (r *replica) stop() {
	if r.cmd == nil || r.done == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(45 * time.Second):
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

// running are the replicas whose process runs.
func (s *stack) running() []*replica {
	var up []*replica
	for _, r := range s.replicas {
		select {
		case <-r.done:
		default:
			up = append(up, r)
		}
	}
	return up
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   map[string]any
}

// call sends an OSB request to r.
func (s *stack) call(r *replica, method, path, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.url(path), rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := s.httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	_ = json.NewDecoder(res.Body).Decode(&a.body)
	return a, nil
}

func provisionBody(ga string) string {
	return fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"context":{"globalaccount_id":%q,"subaccount_id":"sa","user_id":"u@example.com",
		"sm_operator_credentials":{"clientid":"c","clientsecret":"s","sm_url":"https://sm","url":"https://auth"}},"parameters":{"name":"n"}}`,
		serviceID, azurePlanID, ga)
}

func (s *stack) provision(r *replica, id, ga string) (answer, error) {
	return s.call(r, http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", provisionBody(ga))
}

func (s *stack) deprovision(r *replica, id string) (answer, error) {
	return s.call(r, http.MethodDelete, fmt.Sprintf("/oauth/v2/service_instances/%s?accepts_incomplete=true&service_id=%s&plan_id=%s",
		id, serviceID, azurePlanID), "")
}

// accepted is an operation answered with 202.
type accepted struct {
	instanceID, operationID, kind string
}

// waitFinal polls every accepted operation until it is final and returns
// the final states by operation ID; an operation still in progress after
// within fails the test.
func (s *stack) waitFinal(ops []accepted, within time.Duration) map[string]string {
	s.t.Helper()
	final := map[string]string{}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && len(final) < len(ops) {
		up := s.running()
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, op := range ops {
			// The polls started in this round write final as they answer.
			mu.Lock()
			_, done := final[op.operationID]
			mu.Unlock()
			if done {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				a, err := s.call(up[i%len(up)], http.MethodGet,
					fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=%s", op.instanceID, op.operationID), "")
				if err != nil {
					return
				}
				state, _ := a.body["state"].(string)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case a.status == http.StatusOK && (state == "succeeded" || state == "failed"):
					final[op.operationID] = state
				case a.status == http.StatusGone && op.kind == "deprovision":
					final[op.operationID] = "succeeded"
				}
			}()
		}
		wg.Wait()
		if len(final) < len(ops) {
			time.Sleep(time.Second)
		}
	}
	if len(final) < len(ops) {
		n := 0
		for _, op := range ops {
			if _, ok := final[op.operationID]; !ok && n < 5 {
				a, _ := s.call(s.running()[0], http.MethodGet,
					fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=%s", op.instanceID, op.operationID), "")
				s.t.Logf("not final: %s %s of %s: %d %v", op.kind, op.operationID, op.instanceID, a.status, a.body)
				n++
			}
		}
		s.t.Fatalf("%d of %d accepted operations did not reach a final state within %s", len(ops)-len(final), len(ops), within)
	}
	return final
}

// provisionMany provisions n instances named prefix-NNN (tenant
// ga-prefix-NNN) through the replicas in turn, 20 at a time.
func (s *stack) provisionMany(prefix string, n int) []accepted {
	s.t.Helper()
	ops := make([]accepted, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id := fmt.Sprintf("%s-%03d", prefix, i)
			a, err := s.provision(s.replicas[i%len(s.replicas)], id, "ga-"+id)
			if err != nil || a.status != http.StatusAccepted {
				errs[i] = fmt.Errorf("PUT %s: %d %v %v", id, a.status, a.body, err)
				return
			}
			ops[i] = accepted{id, a.body["operation"].(string), "provision"}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatal(err)
	}
	return ops
}

// expectSucceeded waits for ops, expects each to succeed, and returns the
// live instances (instance ID → tenant) they provisioned.
func (s *stack) expectSucceeded(ops []accepted, within time.Duration) map[string]string {
	s.t.Helper()
	final := s.waitFinal(ops, within)
	live := map[string]string{}
	for _, op := range ops {
		if final[op.operationID] != "succeeded" {
			s.t.Errorf("%s of %s: %s", op.kind, op.instanceID, final[op.operationID])
		}
		live[op.instanceID] = "ga-" + op.instanceID
	}
	return live
}

// runningOn lists the operation jobs the queue shows running on r.
func (s *stack) runningOn(r *replica) []int64 {
	s.t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT id FROM river_job WHERE kind = 'keb_operation' AND state = 'running'
		AND attempted_by[array_length(attempted_by, 1)] = $1`, r.queueID(s.t))
	if err != nil {
		return nil
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil
	}
	return ids
}

// checkInvariants asserts what must hold once every operation is final:
// live instances have exactly one Runtime and one Kyma CR; nothing else has
// any; no overrides Secret outlives its runtime; every claimed, not dirty
// pool account belongs to a tenant with a live instance; the database holds
// exactly the live instances.
func (s *stack) checkInvariants(live map[string]string) {
	s.t.Helper()
	ctx := context.Background()
	liveTenants := map[string]bool{}
	for _, ga := range live {
		liveTenants[ga] = true
	}
	var rts infrastructuremanager.RuntimeList
	if err := s.kc.List(ctx, &rts, client.InNamespace(kcpNS)); err != nil {
		s.t.Fatal(err)
	}
	var kymas kyma.KymaList
	if err := s.kc.List(ctx, &kymas, client.InNamespace(kcpNS)); err != nil {
		s.t.Fatal(err)
	}
	for kind, labels := range map[string][]map[string]string{"Runtime": labelsOf(rts.Items), "Kyma": labelsOf(kymas.Items)} {
		per := map[string]int{}
		for _, l := range labels {
			per[l["kyma-project.io/instance-id"]]++
		}
		for id, n := range per {
			if _, ok := live[id]; !ok {
				s.t.Errorf("leftover %s CR of instance %s that is gone", kind, id)
			} else if n > 1 {
				s.t.Errorf("instance %s has %d %s CRs", id, n, kind)
			}
		}
	}
	var secrets corev1.SecretList
	if err := s.kc.List(ctx, &secrets, client.InNamespace(kcpNS)); err != nil {
		s.t.Fatal(err)
	}
	runtimesLive := map[string]bool{}
	for _, rt := range rts.Items {
		runtimesLive[rt.Labels[controlplane.LabelRuntimeID]] = true
	}
	for _, sec := range secrets.Items {
		if strings.HasPrefix(sec.Name, "overrides-") && !runtimesLive[strings.TrimPrefix(sec.Name, "overrides-")] {
			s.t.Errorf("leftover overrides Secret %s", sec.Name)
		}
	}
	for tenant, n := range s.claimedAccounts() {
		if !liveTenants[tenant] {
			s.t.Errorf("tenant %s, which has no live instance, holds %d claimed accounts", tenant, n)
		} else if n > 1 {
			s.t.Errorf("tenant %s holds %d accounts", tenant, n)
		}
	}
	var rows []string
	r, err := s.db.Query(ctx, `SELECT instance_id FROM instances`)
	if err != nil {
		s.t.Fatal(err)
	}
	for r.Next() {
		var id string
		if err := r.Scan(&id); err != nil {
			s.t.Fatal(err)
		}
		rows = append(rows, id)
	}
	if err := r.Err(); err != nil {
		s.t.Fatal(err)
	}
	for _, id := range rows {
		if _, ok := live[id]; !ok {
			s.t.Errorf("leftover instance row %s", id)
		}
	}
	if len(rows) != len(live) {
		s.t.Errorf("%d instance rows, want the %d live instances", len(rows), len(live))
	}
}

func labelsOf[T any, P interface {
	*T
	GetLabels() map[string]string
}](items []T) []map[string]string {
	out := make([]map[string]string, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]).GetLabels())
	}
	return out
}

// claimedAccounts counts the claimed, not dirty, pool accounts per tenant.
func (s *stack) claimedAccounts() map[string]int {
	s.t.Helper()
	var pool security.CredentialsBindingList
	if err := s.kc.List(context.Background(), &pool, client.InNamespace(poolNS)); err != nil {
		s.t.Fatal(err)
	}
	held := map[string]int{}
	for _, b := range pool.Items {
		if tenant := b.Labels[hyperscaler.LabelTenantNameUpstream]; tenant != "" && b.Labels[hyperscaler.LabelDirty] != "true" {
			held[tenant]++
		}
	}
	return held
}

// waitFor waits for an eventual outcome, with a generous bound.
// waitForLoad is waitFor with load running: when it waits in vain, it
// first reports what the load and the replicas were doing, and which
// database server answers as what, so that a failure says which side hung.
func (s *stack) waitForLoad(load *workload, within time.Duration, what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Logf("%s: not within %s; %s", what, within, s.describe(load))
			s.t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// describe reports the load, the replicas' processes and the database
// servers as they are now.
func (s *stack) describe(load *workload) string {
	var b strings.Builder
	b.WriteString(load.describe())
	for _, r := range s.replicas {
		select {
		case <-r.done:
			fmt.Fprintf(&b, "\n%s: exited (%v)", r.name, r.cmd.ProcessState)
		default:
			fmt.Fprintf(&b, "\n%s: running; its goroutines serving requests:\n%s", r.name, r.serving())
		}
	}
	if s.ha != nil {
		b.WriteString("\n" + s.ha.Describe())
	}
	return b.String()
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
