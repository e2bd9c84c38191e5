package lms_test

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/lmssim"
)

func standIn(t *testing.T, token string) (*lmssim.Server, *lms.Client, lms.Config) {
	t.Helper()
	sim, err := lmssim.New("t0ken")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := lms.Config{URL: srv.URL, Token: token, ClusterType: "single-node", Environment: "dev", SAMLTenant: "saml",
		EnabledForGlobalAccounts: "all"}
	return sim, lms.NewClient(cfg, srv.Client(), nil), cfg
}

// TestClientAgainstStandIn: the tenant creation's body as upstream sent
// it, the token header on every call, readiness and certificates polled
// (404 until signed), a CSR the stand-in signs, every HTTP error permanent
// (5xx too) and no answer temporary.
func TestClientAgainstStandIn(t *testing.T) {
	t.Parallel()
	sim, c, cfg := standIn(t, "t0ken")
	ctx := t.Context()
	id, err := c.CreateTenant(ctx, lms.NewTenant(cfg, lms.TenantName("ga-1_X"), "eu"))
	if err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	want := `{"name":"ga1X","region":"eu","samlGroups":["skr-logging-viewer"],"clusterType":"single-node","datacenter":"all",` +
		`"environment":"dev","project":"kyma","samlTenant":"saml","costcenter":0,"globalAccountID":""}`
	if r := sim.Requests()[0]; r.Method != http.MethodPost || r.Path != "/tenants" || r.Body != want {
		t.Errorf("creation %+v, want body %s", r, want)
	}
	st, err := c.TenantStatus(ctx, id)
	if err != nil || st.Ready() {
		t.Errorf("first status %+v, %v: want not ready yet", st, err)
	}
	if st, err = c.TenantStatus(ctx, id); err != nil || !st.Ready() {
		t.Errorf("second status %+v, %v: want ready", st, err)
	}
	info, err := c.TenantInfo(ctx, id)
	if err != nil || info.DNS == "" {
		t.Fatalf("TenantInfo %+v, %v", info, err)
	}
	csr, err := lms.NewCSR("ga-1")
	if err != nil {
		t.Fatal(err)
	}
	callback, err := c.RequestCertificate(ctx, id, csr.Request)
	if err != nil {
		t.Fatalf("RequestCertificate: %v", err)
	}
	last := sim.Requests()[len(sim.Requests())-1]
	var body struct {
		CertID *int   `json:"certId"`
		CSR    string `json:"csr"`
	}
	if err := json.Unmarshal([]byte(last.Body), &body); err != nil || body.CertID == nil || *body.CertID != 0 || body.CSR != string(csr.Request) {
		t.Errorf("certificate request %s", last.Body)
	}
	if _, ready, err := c.SignedCertificate(ctx, callback); ready || err != nil {
		t.Errorf("first read of the callback: ready %v, %v; want a 404 read as not ready", ready, err)
	}
	certPEM, ready, err := c.SignedCertificate(ctx, callback)
	if err != nil || !ready {
		t.Fatalf("second read: %v, %v", ready, err)
	}
	block, _ := pem.Decode([]byte(certPEM))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != "fluentbit" || cert.Subject.Organization[0] != "ga-1" {
		t.Errorf("signed certificate %v, %v", cert.Subject, err)
	}
	if ca, ready, err := c.CACertificate(ctx, id); err != nil || !ready || ca != sim.CA() {
		t.Errorf("CA: ready %v, %v", ready, err)
	}
	for _, r := range sim.Requests() {
		if strings.HasPrefix(r.Path, "/tenants/") && !strings.HasPrefix(r.Path, "/tenants/"+id) {
			t.Errorf("call of another tenant: %+v", r)
		}
	}
	for _, status := range []int{400, 404, 500, 503} {
		sim.FailNext(1, status)
		if _, err := c.TenantInfo(ctx, id); err == nil || lms.Temporary(err) {
			t.Errorf("HTTP %d: %v, want a permanent error", status, err)
		}
	}
	if _, err := c.TenantStatus(ctx, "no-such-tenant"); err == nil || lms.Temporary(err) {
		t.Errorf("unknown tenant: %v, want a permanent error", err)
	}
	_, wrong, _ := standIn(t, "wrong")
	if _, err := wrong.CreateTenant(ctx, lms.NewTenant(cfg, "ga1", "eu")); err == nil || lms.Temporary(err) {
		t.Errorf("wrong token: %v, want a permanent (401) error", err)
	}
	down := lms.NewClient(lms.Config{URL: "http://127.0.0.1:1", Token: "t"}, nil, nil)
	if _, err := down.TenantStatus(ctx, id); err == nil || !lms.Temporary(err) {
		t.Errorf("no answer: %v, want a temporary error", err)
	}
}

// TestStandInRefusals: the stand-in refuses what the contract does not
// allow: unknown or missing fields, a bad name, region or cluster type, a
// CSR that is not fluentbit's.
func TestStandInRefusals(t *testing.T) {
	t.Parallel()
	sim, c, cfg := standIn(t, "t0ken")
	ctx := t.Context()
	for name, tenant := range map[string]lms.Tenant{
		"name with a dash": lms.NewTenant(cfg, "ga-1", "eu"),
		"unknown region":   lms.NewTenant(cfg, "ga1", "westeurope"),
		"cluster type":     lms.NewTenant(lms.Config{ClusterType: "big", Environment: "dev"}, "ga1", "eu"),
		"no environment":   lms.NewTenant(lms.Config{ClusterType: "ha"}, "ga1", "eu"),
	} {
		if _, err := c.CreateTenant(ctx, tenant); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if len(sim.Tenants()) != 0 {
		t.Errorf("tenants %v, want none", sim.Tenants())
	}
	id, err := c.CreateTenant(ctx, lms.NewTenant(cfg, "ga1", "aus"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequestCertificate(ctx, id, []byte("not a CSR")); err == nil || lms.Temporary(err) {
		t.Errorf("garbage CSR: %v, want a refusal", err)
	}
}

func TestRegionAndName(t *testing.T) {
	t.Parallel()
	cfg := lms.Config{}
	for region, want := range map[string]string{"westeurope": "eu", "westus2": "eu", "eastus": "us", "EastUS2EUAP": "us",
		"japaneast": "aus", "": "eu", "eu-central-1": "eu"} {
		if got := cfg.RegionOf(region); got != want {
			t.Errorf("%q: %s, want %s", region, got, want)
		}
	}
	if got := (lms.Config{Region: "us"}).RegionOf("japaneast"); got != "us" {
		t.Errorf("override: %s", got)
	}
	if got := lms.TenantName(strings.Repeat("a-b", 30)); got != strings.Repeat("ab", 25) {
		t.Errorf("long name: %s", got)
	}
	on := lms.Config{URL: "http://lms", EnabledForGlobalAccounts: " GA-1 , ga-2"}
	for _, tc := range []struct {
		ga, plan string
		want     bool
	}{{"ga-1", "aws", true}, {"ga-2", "azure", true}, {"ga-3", "aws", false}, {"ga-1", "trial", false}} {
		if got := on.For(tc.ga, tc.plan); got != tc.want {
			t.Errorf("For(%s, %s) = %v", tc.ga, tc.plan, got)
		}
	}
	if (lms.Config{URL: "http://lms", EnabledForGlobalAccounts: "none"}).Enabled() || (lms.Config{EnabledForGlobalAccounts: "all"}).Enabled() {
		t.Error("none, or no URL, must be off")
	}
}
