package app_test

import (
	"testing"

	osb "sigs.k8s.io/go-open-service-broker-client/v2"

	"github.com/kyma-keb/keb/internal/auth"
)

// TestThirdPartyOSBClient drives keb with the Kubernetes service catalog's
// OSB client, which checks status codes and error bodies the way platforms
// do, including the spec's exact AsyncRequired and ConcurrencyError texts.
func TestThirdPartyOSBClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	newClient := func(token string, version osb.APIVersion) osb.Client {
		t.Helper()
		cfg := osb.DefaultClientConfiguration()
		cfg.URL = b.srv.URL + "/oauth/cf-eu10"
		cfg.APIVersion = version
		if token != "" {
			cfg.AuthConfig = &osb.AuthConfig{BearerConfig: &osb.BearerConfig{Token: token}}
		}
		c, err := osb.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	client := newClient(b.token, osb.Version2_14())
	statusOf := func(err error) int {
		t.Helper()
		httpErr, ok := osb.IsHTTPError(err)
		if !ok {
			t.Fatalf("want an HTTP error, got %v", err)
		}
		return httpErr.StatusCode
	}

	cat, err := client.GetCatalog()
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	if len(cat.Services) != 1 || cat.Services[0].ID != serviceID || len(cat.Services[0].Plans) != 8 {
		t.Fatalf("unexpected catalog: %+v", cat.Services)
	}
	if _, err := newClient("", osb.Version2_14()).GetCatalog(); statusOf(err) != 401 {
		t.Fatalf("no token: %v", err)
	}
	if _, err := newClient(b.mint(auth.ScopeCLDRead), osb.Version2_14()).GetCatalog(); statusOf(err) != 403 {
		t.Fatalf("wrong scope: %v", err)
	}
	if _, err := newClient(b.token, osb.APIVersion{}).GetCatalog(); statusOf(err) != 412 {
		t.Fatalf("no API version: %v", err)
	}

	req := &osb.ProvisionRequest{
		InstanceID:       "osb-inst-1",
		ServiceID:        serviceID,
		PlanID:           azurePlanID,
		OrganizationGUID: "org",
		SpaceGUID:        "space",
		Parameters:       map[string]any{"name": "osb"},
		Context:          map[string]any{"globalaccount_id": "ga", "subaccount_id": "sa", "user_id": "u"},
	}
	if _, err := client.ProvisionInstance(req); !osb.IsAsyncRequiredError(err) {
		t.Fatalf("provision without accepts_incomplete: want AsyncRequired, got %v", err)
	}
	req.AcceptsIncomplete = true
	prov, err := client.ProvisionInstance(req)
	if err != nil || !prov.Async || prov.OperationKey == nil {
		t.Fatalf("provision: %+v, %v", prov, err)
	}
	again, err := client.ProvisionInstance(req)
	if err != nil || *again.OperationKey != *prov.OperationKey {
		t.Fatalf("re-sent provision: %+v, %v", again, err)
	}
	conflicting := *req
	conflicting.Parameters = map[string]any{"name": "other"}
	if _, err := client.ProvisionInstance(&conflicting); !osb.IsConflictError(err) {
		t.Fatalf("conflicting provision: want 409, got %v", err)
	}

	last, err := client.PollLastOperation(&osb.LastOperationRequest{InstanceID: "osb-inst-1", OperationKey: prov.OperationKey})
	if err != nil || last.State != osb.StateInProgress {
		t.Fatalf("last_operation: %+v, %v", last, err)
	}
	if _, err := client.PollLastOperation(&osb.LastOperationRequest{InstanceID: "nope"}); statusOf(err) != 404 {
		t.Fatalf("last_operation of unknown instance: %v", err)
	}
	if _, err := client.GetInstance(&osb.GetInstanceRequest{InstanceID: "osb-inst-1"}); statusOf(err) != 404 {
		t.Fatalf("get instance while provisioning: %v", err)
	}

	dep, err := client.DeprovisionInstance(&osb.DeprovisionRequest{InstanceID: "osb-inst-1", ServiceID: serviceID, PlanID: azurePlanID, AcceptsIncomplete: true})
	if err != nil || !dep.Async || dep.OperationKey == nil {
		t.Fatalf("deprovision: %+v, %v", dep, err)
	}
	if _, err := client.ProvisionInstance(req); !osb.IsConcurrencyError(err) {
		t.Fatalf("provision while deprovisioning: want ConcurrencyError, got %v", err)
	}
	// The client maps 410 on DELETE to success, as platforms do.
	gone, err := client.DeprovisionInstance(&osb.DeprovisionRequest{InstanceID: "never-existed", ServiceID: serviceID, PlanID: azurePlanID, AcceptsIncomplete: true})
	if err != nil || gone.Async {
		t.Fatalf("deprovision of unknown instance: %+v, %v", gone, err)
	}
}
