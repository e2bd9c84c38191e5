package e2e

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/lmsim"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	testIssuer  = "keb-e2e"
	testAud     = "keb"
	secretKey   = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	kcpNS       = "kcp-system"
	poolNS      = "garden-kyma-dev"
)

// stack is a whole keb on real parts: PostgreSQL, a control-plane
// kube-apiserver, the simulated infrastructure manager giving runtimes real
// apiservers, and the broker with its workers, over HTTP.
type stack struct {
	t      *testing.T
	url    string
	token  string
	kcp    client.Client
	scheme *k8sruntime.Scheme
	key    *auth.DevKey
	// failing makes the simulated infrastructure manager fail the runtime
	// IDs stored in it (values: the message), from its next change on.
	failing *sync.Map
	// dbURL is keb's database, for checks a client cannot make.
	dbURL string
}

// newStack seeds the control plane's pool with accounts and starts keb.
// Each stack uses its own namespaces' objects by name prefix, so stacks must
// not run in parallel on one control plane.
func newStack(t *testing.T, mode infrasim.Mode, accounts int, tweaks ...func(*config.Config)) *stack {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	return newStackLogging(t, log, mode, accounts, tweaks...)
}

// simFaults, when set before newStack, makes the simulated
// infrastructure manager fail the creations and spec changes it returns a
// fault for.
var simFaults func(rt *infrastructuremanager.Runtime) *infrasim.Fault

// newStackLogging is newStack with keb logging to log.
func newStackLogging(t *testing.T, log *logrus.Logger, mode infrasim.Mode, accounts int, tweaks ...func(*config.Config)) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := client.New(kcp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	seedPool(t, kc, accounts)

	bin, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	simLog := logrus.New()
	simLog.SetOutput(io.Discard)
	failing := &sync.Map{}
	faults := simFaults
	sim, err := infrasim.New(kcp.Config, scheme, infrasim.Options{Namespace: kcpNS, Mode: mode, BinDir: bin, Delay: time.Second, Log: simLog,
		Gardener: &infrasim.Gardener{Namespace: poolNS},
		Faults: func(rt *infrastructuremanager.Runtime) *infrasim.Fault {
			if msg, ok := failing.Load(rt.RuntimeID()); ok {
				return &infrasim.Fault{Message: msg.(string), Permanent: true}
			}
			if faults != nil {
				return faults(rt)
			}
			return nil
		},
		// Runtimes start without CRDs: the Lifecycle Manager stand-in
		// installs the BtpOperator CRD with the btp-operator module.
		RuntimeCRDs: []*apiextensionsv1.CustomResourceDefinition{}})
	if err != nil {
		t.Fatal(err)
	}
	lm, err := lmsim.New(kcp.Config, scheme, lmsim.Options{Namespace: kcpNS, Resync: 500 * time.Millisecond, Log: simLog})
	if err != nil {
		t.Fatal(err)
	}
	simDone := make(chan struct{}, 2)
	go func() { _ = sim.Start(ctx); simDone <- struct{}{} }()
	go func() { _ = lm.Start(ctx); simDone <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-simDone; <-simDone })

	kubeconfig := filepath.Join(t.TempDir(), "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	key, err := auth.LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.DatabaseSecretKey = secretKey
	cfg.Issuer, cfg.Audience = testIssuer, testAud
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.Engine.KCPKubeconfig = kubeconfig
	cfg.Engine.Workers = 8
	cfg.Engine.RuntimePoll = 2 * time.Second
	cfg.Engine.BTPMgrPoll = time.Second
	cfg.Engine.RemovalPoll = time.Second
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	a, err := app.New(ctx, cfg, log, &app.DevOptions{PublicKeys: []crypto.PublicKey{key.Public()}})
	if err != nil {
		t.Fatalf("building keb: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { _ = a.Serve(ctx, ln); close(served) }()
	t.Cleanup(func() { cancel(); <-served; a.Close() })
	tok, err := key.Mint(testIssuer, testAud, "e2e", []string{auth.ScopeBrokerWrite, auth.ScopeCLDRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{t: t, url: "http://" + ln.Addr().String(), token: tok, kcp: kc, scheme: scheme, key: key, failing: failing, dbURL: cfg.DatabaseURL}
}

func seedPool(t *testing.T, c client.Client, accounts int) {
	t.Helper()
	ctx := t.Context()
	for _, ns := range []string{kcpNS, poolNS} {
		_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for i := range accounts {
		createAccount(ctx, c, fmt.Sprintf("azure-%03d", i), hyperscaler.TypeAzure)
	}
	// Trials run in a shared account, never claimed by a tenant.
	createAccount(ctx, c, "azure-shared-000", hyperscaler.TypeAzure, hyperscaler.LabelShared, "true")
}

// createAccount creates a pool account (a CredentialsBinding with its Secret) of hyperscaler type
// typ and extra labels as key, value pairs; an existing one is left alone.
func createAccount(ctx context.Context, c client.Client, name, typ string, kv ...string) error {
	labels := map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: typ}
	for i := 0; i+1 < len(kv); i += 2 {
		labels[kv[i]] = kv[i+1]
	}
	for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, poolNS, name, hyperscaler.ProviderOf(typ), labels,
		map[string]string{"credentials": "e2e"}) {
		if err := c.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	return nil
}

// poolAccount reads a pool account's metadata.
func poolAccount(t *testing.T, c client.Client, name string) *security.CredentialsBinding {
	t.Helper()
	b := &security.CredentialsBinding{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: poolNS, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// call sends an OSB request and decodes the JSON answer.
func (s *stack) call(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	code, _, raw := s.send(method, path, body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return code, out
}

// send sends an OSB request and returns the status, headers and body.
func (s *stack) send(method, path, body string) (int, http.Header, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return res.StatusCode, res.Header, raw
}

// runtime returns the instance as GET /runtimes shows it to an operator.
func (s *stack) runtime(instanceID string) map[string]any {
	s.t.Helper()
	code, body := s.call(http.MethodGet, "/runtimes?state=all&instance_id="+instanceID, "")
	data, _ := body["data"].([]any)
	if code != http.StatusOK || len(data) != 1 {
		s.t.Fatalf("GET /runtimes for %s: %d %v", instanceID, code, body)
	}
	return data[0].(map[string]any)
}

// status is the runtime's status block as /runtimes shows it.
func status(rt map[string]any) map[string]any { return rt["status"].(map[string]any) }

// waitFor polls last_operation until the operation is no longer in progress
// and returns its final state and description (or "gone" for a 410).
func (s *stack) waitFor(instanceID, opID string, within time.Duration) (string, string) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		code, body := s.call(http.MethodGet, "/oauth/v2/service_instances/"+instanceID+"/last_operation?operation="+opID, "")
		switch {
		case code == http.StatusGone:
			return "gone", ""
		case code != http.StatusOK:
			s.t.Fatalf("last_operation: %d %v", code, body)
		case body["state"] != "in progress":
			return body["state"].(string), fmt.Sprint(body["description"])
		}
		last = fmt.Sprint(body["description"])
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("operation %s still in progress after %s: %s", opID, within, last)
	return "", ""
}
