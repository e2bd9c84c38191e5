package edp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/edpsim"
)

func standIn(t *testing.T, secret string) (*edpsim.Server, *edp.Client) {
	t.Helper()
	sim := edpsim.New("kyma-dev", "s3cret")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := edp.Config{AdminURL: srv.URL, AuthURL: srv.URL, Namespace: "kyma-dev", Secret: secret, Environment: "dev"}
	return sim, edp.NewClient(cfg, srv.Client(), nil)
}

// TestClientAgainstStandIn: the tenant and metadata bodies as the contract
// has them, 201/204 success, 409 a conflict, 404 fine on deletions only,
// 200 not a success, 5xx and 408 temporary, a wrong secret no token.
func TestClientAgainstStandIn(t *testing.T) {
	t.Parallel()
	sim, c := standIn(t, "s3cret")
	ctx := t.Context()
	if err := c.CreateDataTenant(ctx, "sa-1"); err != nil {
		t.Fatalf("CreateDataTenant: %v", err)
	}
	for _, item := range edp.Metadata("SA-1", "cf-eu10", "azure_lite") {
		if err := c.CreateMetadata(ctx, "sa-1", item); err != nil {
			t.Fatalf("CreateMetadata %s: %v", item.Key, err)
		}
	}
	reqs := sim.Requests()
	if r := reqs[0]; r.Path != "/namespaces/kyma-dev/dataTenants" || r.Body != `{"name":"sa-1","environment":"dev","secret":"c2EtMWRldg=="}` {
		t.Errorf("tenant creation %+v", r)
	}
	want := []string{`{"key":"maasConsumerEnvironment","value":"CF"}`, `{"key":"maasConsumerRegion","value":"cf-eu10"}`,
		`{"key":"maasConsumerSubAccount","value":"sa-1"}`, `{"key":"maasConsumerServicePlan","value":"tdd"}`}
	for i, w := range want {
		if r := reqs[i+1]; r.Path != "/namespaces/kyma-dev/dataTenants/sa-1/dev/metadata" || r.Body != w {
			t.Errorf("metadata %d: %+v, want %s", i, r, w)
		}
	}
	if err := c.CreateDataTenant(ctx, "sa-1"); !edp.Conflict(err) {
		t.Errorf("a second tenant: %v, want a conflict", err)
	}
	if err := c.UpdateMetadata(ctx, "sa-1", edp.MetadataItem{Key: edp.KeyServicePlan, Value: "standard"}); err != nil ||
		sim.Tenants()["sa-1/dev"][edp.KeyServicePlan] != "standard" {
		t.Errorf("UpdateMetadata: %v, tenant %v", err, sim.Tenants()["sa-1/dev"])
	}
	if last := sim.Requests()[len(sim.Requests())-1]; last.Method != http.MethodPut || last.Body != `{"value":"standard"}` {
		t.Errorf("update %+v", last)
	}
	for range 2 { // the second time everything is gone already: 404s, no error
		for _, k := range edp.Keys {
			if err := c.DeleteMetadata(ctx, "sa-1", k); err != nil {
				t.Fatalf("DeleteMetadata: %v", err)
			}
		}
		if err := c.DeleteDataTenant(ctx, "sa-1"); err != nil {
			t.Fatalf("DeleteDataTenant: %v", err)
		}
	}
	if len(sim.Tenants()) != 0 {
		t.Errorf("tenants left: %v", sim.Tenants())
	}
	for status, temporary := range map[int]bool{200: false, 400: false, 408: true, 500: true, 503: true} {
		sim.FailNext(1, status)
		err := c.CreateDataTenant(ctx, "sa-2")
		if err == nil || edp.Temporary(err) != temporary {
			t.Errorf("HTTP %d: %v, want an error, temporary %v", status, err, temporary)
		}
	}
	if err := c.UpdateMetadata(ctx, "nope", edp.MetadataItem{Key: edp.KeyServicePlan}); err == nil || edp.Temporary(err) {
		t.Errorf("updating an unknown tenant: %v, want a permanent error", err)
	}
	_, wrong := standIn(t, "wrong")
	if err := wrong.CreateDataTenant(ctx, "sa-3"); err == nil || !edp.Temporary(err) {
		t.Errorf("wrong secret: %v, want a (temporary) token error", err)
	}
}

func TestMetadataMapping(t *testing.T) {
	t.Parallel()
	for region, env := range map[string]string{"cf-eu10": "CF", "k8s-us20": "KUBERNETES", "neo-eu1": "NEO", "x": "CF"} {
		if got := edp.Metadata("s", region, "aws")[0].Value; got != env {
			t.Errorf("%s: %s, want %s", region, got, env)
		}
	}
	for plan, want := range map[string]string{"free": "free", "azure_lite": "tdd", "build-runtime-gcp": "build-runtime",
		"preview": "build-runtime", "trial": "standard", "aws": "standard"} {
		if got := edp.ServicePlan(plan); got != want {
			t.Errorf("%s: %s, want %s", plan, got, want)
		}
	}
}
