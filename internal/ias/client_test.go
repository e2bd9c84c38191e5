package ias_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/iassim"
)

func standIn(t *testing.T, password string) (*iassim.Server, *ias.Client, string) {
	t.Helper()
	sim := iassim.New("keb", "s3cret", "corporate-idp")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := ias.Config{URL: srv.URL, UserID: "keb", UserSecret: password, IdentityProvider: "corporate-idp"}
	return sim, ias.NewClient(cfg, srv.Client(), nil), srv.URL
}

// TestClientAgainstStandIn: every call's body as the contract has it, the
// form of a creation percent-encoded, deletions of what is gone fine,
// 408 and 5xx temporary, other refusals (a wrong password too) permanent.
func TestClientAgainstStandIn(t *testing.T) {
	t.Parallel()
	sim, c, base := standIn(t, "s3cret")
	ctx := t.Context()
	name := ias.DisplayName("inst-1")
	if err := c.CreateServiceProvider(ctx, name); err != nil {
		t.Fatalf("CreateServiceProvider: %v", err)
	}
	co, err := c.Company(ctx)
	if err != nil {
		t.Fatalf("Company: %v", err)
	}
	sp, ok := co.ServiceProvider(name)
	idp, idpOK := co.IdentityProvider("corporate-idp")
	if !ok || !idpOK {
		t.Fatalf("company %+v: no service provider %q or identity provider", co, name)
	}
	// An operator's own value of a key keb sets is kept.
	sp.AssertionAttributes = []ias.AssertionAttribute{{AssertionAttribute: "email", UserAttribute: "otherMail"},
		{AssertionAttribute: "custom", UserAttribute: "x"}}
	for what, err := range map[string]error{
		"attributes": c.SetAssertionAttributes(ctx, sp), "name ID": c.SetNameID(ctx, sp.ID),
		"default IdP": c.SetDefaultIdP(ctx, sp.ID, idp.ID), "rules": c.SetAccessRules(ctx, sp.ID),
		"OIDC": c.SetOIDC(ctx, sp.ID, "grafana.c-1.kyma.example.com"),
	} {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	creds, err := c.GenerateSecret(ctx, sp.ID)
	if err != nil || creds.ClientID != sp.UserForRest || creds.ClientSecret == "" {
		t.Fatalf("GenerateSecret: %+v, %v", creds, err)
	}
	want := map[string]struct{ method, path, query, body string }{
		"create":  {"POST", "/service/sps", "", "company_id=global&sp_name=SKR+Grafana+%28instanceID%3A+inst-1%29"},
		"company": {"GET", "/service/company/global", "", ""},
		"attributes": {"PUT", "/service/sps/" + sp.ID, "", `{"assertion_attributes":[{"assertionAttribute":"first_name","userAttribute":"firstName"},` +
			`{"assertionAttribute":"last_name","userAttribute":"lastName"},{"assertionAttribute":"email","userAttribute":"otherMail"},` +
			`{"assertionAttribute":"groups","userAttribute":"companyGroups"}]}`},
		"name ID":     {"PUT", "/service/sps/" + sp.ID, "", `{"name_id_attribute":"mail"}`},
		"default IdP": {"PUT", "/service/sps", "", `{"organization":"global","id":"` + sp.ID + `","default_auth_idp":"` + base + `/service/idp/` + idp.ID + `"}`},
		"rules": {"PUT", "/service/sps/" + sp.ID + "/rba", "", `{"service_provider":{"rba_config":{"rba_rules":[` +
			`{"action":"Allow","group":"skr-monitoring-admin","group_type":"Cloud"},{"action":"Allow","group":"skr-monitoring-viewer","group_type":"Cloud"}],"default_action":"Deny"}}}`},
		"OIDC": {"PUT", "/service/sps/" + sp.ID, "", `{"ssoType":"openIdConnect","sp_name":"grafana.c-1.kyma.example.com",` +
			`"openId_connect_configuration":{"redirect_uris":["https://grafana.c-1.kyma.example.com/login/generic_oauth"]}}`},
		"secret": {"PUT", "/service/sps", "", `{"organization":"global","id":"` + sp.ID + `","rest_api_client_secret":` +
			`{"description":"SAP Kyma Runtime Secret","scopes":["ManageApp","ManageUsers","OAuth"]}}`},
	}
	seen := map[string]bool{}
	for _, r := range sim.Requests() {
		for what, w := range want {
			if r.Method == w.method && r.Path == w.path && r.Query == w.query && r.Body == w.body {
				seen[what] = true
			}
		}
	}
	for what, w := range want {
		if !seen[what] {
			t.Errorf("%s: no request %s %s %s among %+v", what, w.method, w.path, w.body, sim.Requests())
		}
	}
	got := sim.ServiceProviders()[name]
	if got.NameID != "mail" || got.SSOType != "openIdConnect" || len(got.Rules) != 2 || got.DefaultAction != "Deny" ||
		got.Secrets[got.ClientSecrets[0].ID] != creds.ClientSecret {
		t.Errorf("service provider %+v", got)
	}
	co, _ = c.Company(ctx)
	sp, _ = co.ServiceProvider(name)
	if err := c.DeleteSecrets(ctx, sp); err != nil || len(sim.ServiceProviders()[name].Secrets) != 0 {
		t.Errorf("DeleteSecrets: %v, left %v", err, sim.ServiceProviders()[name].Secrets)
	}
	if last := sim.Requests()[len(sim.Requests())-1]; last.Method != http.MethodDelete || last.Path != "/service/sps/clientSecret" ||
		last.Body != `{"clientId":"`+sp.UserForRest+`","clientSecretsIds":["`+sp.ClientSecrets[0].ID+`"]}` {
		t.Errorf("secret deletion %+v", last)
	}
	for range 2 { // the second time it is gone already: 404, no error
		if err := c.DeleteServiceProvider(ctx, sp.ID); err != nil {
			t.Fatalf("DeleteServiceProvider: %v", err)
		}
	}
	if last := sim.Requests()[len(sim.Requests())-1]; last.Method != http.MethodPut || last.Path != "/service/sps/delete" ||
		last.Query != "sp_id="+sp.ID || last.Body != "" {
		t.Errorf("deletion %+v", last)
	}
	if len(sim.ServiceProviders()) != 0 {
		t.Errorf("service providers left: %v", sim.ServiceProviders())
	}
	if err := c.SetNameID(ctx, "nope"); err == nil || ias.Temporary(err) {
		t.Errorf("an unknown service provider: %v, want a permanent error", err)
	}
	for status, temporary := range map[int]bool{400: false, 401: false, 404: false, 408: true, 500: true, 503: true} {
		sim.FailNext(1, status)
		err := c.CreateServiceProvider(ctx, "x")
		if err == nil || ias.Temporary(err) != temporary {
			t.Errorf("HTTP %d: %v, want an error, temporary %v", status, err, temporary)
		}
	}
	_, wrong, _ := standIn(t, "wrong")
	if _, err := wrong.Company(ctx); err == nil || ias.Temporary(err) {
		t.Errorf("wrong password: %v, want a permanent error", err)
	}
}
