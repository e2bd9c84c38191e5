package provisioning_test

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/lmssim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// lmsStack is the LMS stand-in, a client of it, and a store over a fresh
// database.
type lmsStack struct {
	sim    *lmssim.Server
	client *lms.Client
	cfg    lms.Config
	store  *storage.Store
	url    string
}

func newLMSStack(t *testing.T, mandatory bool) *lmsStack {
	t.Helper()
	sim, err := lmssim.New("t0ken")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := lms.Config{URL: srv.URL, Token: "t0ken", ClusterType: "single-node", Environment: "dev", Mandatory: mandatory,
		EnabledForGlobalAccounts: "all"}
	return &lmsStack{sim: sim, client: lms.NewClient(cfg, srv.Client(), nil), cfg: cfg,
		store: storage.NewStore(pgtest.NewPool(t), nil, nil), url: srv.URL}
}

func (s *lmsStack) tenantStep() *provisioning.LMSTenant {
	return &provisioning.LMSTenant{LMS: s.client, Tenants: s.store, Config: s.cfg}
}

// lmsOp is a provisioning of a fresh instance in region, with its
// overrides Secret, as the overrides step leaves it.
func lmsOp(t *testing.T, region string) (*process.Operation, *provisioning.LMSCertificates) {
	t.Helper()
	op, c, ns := iasOp(t)
	op.Instance.Parameters = json.RawMessage(`{"name":"c1","region":"` + region + `"}`)
	return op, &provisioning.LMSCertificates{KCP: c, Namespace: ns, PollInterval: time.Millisecond}
}

// TestLMSTenantAndCertificates runs both steps against the stand-in, a
// real database and a real API server: the tenant created as the contract
// says and recorded, reused by the account's next runtime and by a re-run
// after a crash (never created twice), the certificates polled until
// ready and written into the overrides Secret with the key, never into the
// record.
func TestLMSTenantAndCertificates(t *testing.T) {
	t.Parallel()
	s := newLMSStack(t, true)
	op, certs := lmsOp(t, "eastus")
	certs.LMS = s.client
	res, err := s.tenantStep().Run(t.Context(), op)
	processtest.MustOutcome(t, "tenant", processtest.Done, res, err)
	tenants := s.sim.Tenants()
	if len(tenants) != 1 || op.Record.LMS == nil || op.Record.LMS.TenantID != tenants[0].ID || op.Record.LMS.Reused {
		t.Fatalf("tenants %+v, record %+v", tenants, op.Record.LMS)
	}
	want := `{"name":"` + lms.TenantName(op.Instance.GlobalAccountID) + `","region":"us","samlGroups":["skr-logging-viewer"],` +
		`"clusterType":"single-node","datacenter":"all","environment":"dev","project":"kyma","samlTenant":"","costcenter":0,"globalAccountID":""}`
	if r := s.sim.Requests()[0]; r.Path != "/tenants" || r.Body != want {
		t.Errorf("creation %+v, want body %s", r, want)
	}

	// A crash before the record was saved: the re-run finds the tenant.
	again := processtest.Operation(storage.OperationTypeProvision, op.Instance)
	res, err = s.tenantStep().Run(t.Context(), again)
	processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
	// The account's next runtime (another instance), in the same LMS region.
	next := processtest.Operation(storage.OperationTypeProvision, processtest.Instance(t, catalog.AWSPlanID))
	next.Instance.GlobalAccountID = op.Instance.GlobalAccountID
	next.Instance.Parameters = json.RawMessage(`{"name":"c2","region":"centralus"}`)
	res, err = s.tenantStep().Run(t.Context(), next)
	processtest.MustOutcome(t, "next runtime", processtest.Done, res, err)
	if n := len(s.sim.Tenants()); n != 1 || again.Record.LMS.TenantID != tenants[0].ID || next.Record.LMS.TenantID != tenants[0].ID ||
		!next.Record.LMS.Reused {
		t.Fatalf("%d tenants; re-run %+v, next %+v: want the one tenant reused", n, again.Record.LMS, next.Record.LMS)
	}

	// The tenant is not ready at the first look, nor the certificate
	// signed at the first read (the stand-in's ReadyAfter, SignAfter): the
	// step waits twice, then writes the overrides.
	for i, want := range []processtest.Outcome{processtest.Retry, processtest.Retry, processtest.Done} {
		res, err = certs.Run(t.Context(), op)
		processtest.MustOutcome(t, fmt.Sprintf("certificates, run %d", i+1), want, res, err)
	}
	data := overridesData(t, certs.KCP, certs.Namespace, op.Record.OverridesSecret)
	dns := strings.TrimPrefix(op.Record.LMS.KibanaURL, "https://kibana.")
	if dns == "" || dns == op.Record.LMS.KibanaURL {
		t.Fatalf("record %+v: no Kibana URL", op.Record.LMS)
	}
	for _, prefix := range []string{"logging.fluent-bit.conf.", "logging.fluent-bit.config."} {
		if got := string(data[prefix+"outputs.forward.host"]); got != "forward."+dns {
			t.Errorf("%shost %q, want forward.%s", prefix, got, dns)
		}
		if got := string(data[prefix+"filters.record_modifier.record"]); got != "subaccount_id "+op.Instance.SubAccountID {
			t.Errorf("%srecord %q", prefix, got)
		}
	}
	pemOf := func(key string) []byte {
		raw, err := base64.StdEncoding.DecodeString(string(data["logging.fluent-bit.conf.outputs.forward.tls."+key]))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return raw
	}
	if _, err := tls.X509KeyPair(pemOf("cert"), pemOf("key")); err != nil {
		t.Errorf("the certificate and key in the overrides do not match: %v", err)
	}
	if string(pemOf("ca")) != s.sim.CA() {
		t.Error("the overrides' CA is not the stand-in's")
	}
	if string(data["monitoring.keep"]) != "me" {
		t.Error("the other overrides were not kept")
	}
	if rec := processtest.MustJSON(t, op.Record); strings.Contains(rec, "PRIVATE KEY") || strings.Contains(rec, "CERTIFICATE") {
		t.Errorf("the record holds key material: %s", rec)
	}
	var csrPosts int
	for _, r := range s.sim.Requests() {
		if strings.HasSuffix(r.Path, "/certs") {
			csrPosts++
		}
	}
	// Done: a re-run of the finished step asks LMS nothing.
	calls := len(s.sim.Requests())
	res, err = certs.Run(t.Context(), op)
	processtest.MustOutcome(t, "certificates again", processtest.Done, res, err)
	if csrPosts != 1 || len(s.sim.Requests()) != calls {
		t.Errorf("%d certificate requests, %d calls after the step was done", csrPosts, len(s.sim.Requests())-calls)
	}
}

// TestLMSFailureRules: LMS not answering is an error the engine retries
// (and fails after 30 minutes); LMS refusing (any HTTP error, 5xx too) is
// asked again every 30 s for 3 minutes, then fails the step: the
// provisioning with APP_LMS_MANDATORY, a skip with a warning without it
// (the certificates then not requested); trial runtimes get no LMS.
func TestLMSFailureRules(t *testing.T) {
	t.Parallel()
	s := newLMSStack(t, true)
	op, certs := lmsOp(t, "westeurope")
	certs.LMS = s.client

	s.sim.FailNext(1, 500)
	res, err := s.tenantStep().Run(t.Context(), op)
	if err != nil || res.RetryAfter != 30*time.Second || op.Record.LMS.RefusedSince == nil {
		t.Fatalf("refused: %+v, %v, record %+v; want asked again in 30 s", res, err, op.Record.LMS)
	}
	past := time.Now().Add(-4 * time.Minute)
	op.Record.LMS.RefusedSince = &past
	s.sim.FailNext(1, 503)
	res, err = s.tenantStep().Run(t.Context(), op)
	processtest.MustOutcome(t, "refused for 3 minutes", processtest.Failure, res, err)
	if !op.Record.LMS.Failed || len(s.sim.Tenants()) != 0 {
		t.Errorf("record %+v, tenants %v", op.Record.LMS, s.sim.Tenants())
	}
	// The certificates of a failed LMS are not requested.
	calls := len(s.sim.Requests())
	res, err = certs.Run(t.Context(), op)
	processtest.MustOutcome(t, "certificates after LMS failed", processtest.Done, res, err)
	if len(s.sim.Requests()) != calls {
		t.Error("the certificates step called LMS after LMS failed")
	}

	down := &provisioning.LMSTenant{LMS: lms.NewClient(lms.Config{URL: "http://127.0.0.1:1", Token: "t"}, nil, nil),
		Tenants: s.store, Config: s.cfg}
	downOp, _ := lmsOp(t, "")
	res, err = down.Run(t.Context(), downOp)
	if err == nil || res.Failure != nil || down.Timeout() != 30*time.Minute {
		t.Errorf("LMS down: %+v, %v; want an error retried for 30 minutes", res, err)
	}

	trial := processtest.Operation(storage.OperationTypeProvision, processtest.Instance(t, catalog.TrialPlanID))
	res, err = s.tenantStep().Run(t.Context(), trial)
	processtest.MustOutcome(t, "trial", processtest.Done, res, err)
	if trial.Record.LMS != nil {
		t.Errorf("trial got LMS: %+v", trial.Record.LMS)
	}
}

// TestLMSStepsJoinOnlyWhenEnabled: without APP_LMS_URL (or for no global
// account) the pipeline is keb's own; enabled, the tenant follows EDP's
// place before the components and the certificates come before the
// cluster; without APP_LMS_MANDATORY both are skippable.
func TestLMSStepsJoinOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	own := stepNames(provisioning.Deps{})
	d := provisioning.Deps{Config: provisioning.Config{LMS: lms.Config{URL: "https://lms.example.com", EnabledForGlobalAccounts: "none"}}}
	if got := stepNames(d); !slices.Equal(got, own) {
		t.Errorf("LMS for no account: steps %v, want %v", got, own)
	}
	d.Config.LMS.EnabledForGlobalAccounts, d.Config.LMS.Mandatory = "all", true
	got := stepNames(d)
	want := slices.Insert(slices.Clone(own), slices.Index(own, "components"), "lms_tenant")
	want = slices.Insert(want, slices.Index(want, "create_runtime"), "lms_certificates")
	if !slices.Equal(got, want) {
		t.Errorf("LMS enabled: steps %v, want %v", got, want)
	}
	skippable := func(d provisioning.Deps) (n int) {
		for _, s := range provisioning.Pipeline(d).Steps {
			if _, ok := s.(process.SkippableStep); ok && strings.HasPrefix(s.Name(), "lms_") {
				n++
			}
		}
		return n
	}
	if n := skippable(d); n != 0 {
		t.Errorf("mandatory: %d skippable LMS steps", n)
	}
	d.Config.LMS.Mandatory = false
	if n := skippable(d); n != 2 {
		t.Errorf("not mandatory: %d skippable LMS steps, want 2", n)
	}
}

// TestLMSTenantLMSForgot: a recorded tenant LMS answers 404 for (keb dev's
// stand-in restarted with keb's database kept) is forgotten and created
// again by the certificates step, which then gets its certificates.
func TestLMSTenantLMSForgot(t *testing.T) {
	t.Parallel()
	first := newLMSStack(t, true)
	op, certs := lmsOp(t, "japaneast")
	res, err := first.tenantStep().Run(t.Context(), op)
	processtest.MustOutcome(t, "tenant", processtest.Done, res, err)
	old := op.Record.LMS.TenantID

	// A new stand-in that never heard of it, over the same database.
	restarted := newLMSStack(t, true)
	restarted.store = first.store
	certs.LMS, certs.Tenant = restarted.client, restarted.tenantStep()
	res, err = certs.Run(t.Context(), op)
	processtest.MustOutcome(t, "certificates of a forgotten tenant", processtest.Retry, res, err)
	tenants := restarted.sim.Tenants()
	if len(tenants) != 1 || op.Record.LMS.TenantID != tenants[0].ID || op.Record.LMS.TenantID == old || tenants[0].Region != "aus" {
		t.Fatalf("record %+v, tenants %+v: want a new tenant in aus", op.Record.LMS, tenants)
	}
	// The new one is recorded: the account's next runtime finds it.
	next := processtest.Operation(storage.OperationTypeProvision, processtest.Instance(t, catalog.AWSPlanID))
	next.Instance.GlobalAccountID = op.Instance.GlobalAccountID
	next.Instance.Parameters = op.Instance.Parameters
	res, err = restarted.tenantStep().Run(t.Context(), next)
	processtest.MustOutcome(t, "next runtime", processtest.Done, res, err)
	if next.Record.LMS.TenantID != tenants[0].ID || len(restarted.sim.Tenants()) != 1 {
		t.Errorf("next runtime's tenant %s, want %s", next.Record.LMS.TenantID, tenants[0].ID)
	}
	for range 5 { // not ready at the first look, then signed at the second read
		if res, err = certs.Run(t.Context(), op); err != nil || res.RetryAfter == 0 {
			break
		}
	}
	processtest.MustOutcome(t, "certificates", processtest.Done, res, err)
}
