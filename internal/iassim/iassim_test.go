package iassim_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/iassim"
)

// TestStrict: the stand-in refuses what IAS refuses: no or wrong Basic
// credentials, a creation that is not the form, a JSON body of no known
// shape or with two changes at once, an unknown service provider, a
// default identity provider the company lacks, and a second provider of
// one display name (where the contract is silent: 409).
func TestStrict(t *testing.T) {
	t.Parallel()
	sim := iassim.New("keb", "s3cret", "idp")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	call := func(method, path, contentType, body, user, password string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const form, js = "application/x-www-form-urlencoded", "application/json"
	ok := func(method, path, ct, body string) int { return call(method, path, ct, body, "keb", "s3cret") }
	if got := ok("POST", "/service/sps", form, "sp_name=a&company_id=global"); got != http.StatusCreated {
		t.Fatalf("creation: %d", got)
	}
	var id string
	for _, sp := range sim.ServiceProviders() {
		id = sp.ID
	}
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{"no credentials", call("GET", "/service/company/global", "", "", "", ""), 401},
		{"a wrong password", call("GET", "/service/company/global", "", "", "keb", "nope"), 401},
		{"a JSON creation", ok("POST", "/service/sps", js, `{"sp_name":"b"}`), 415},
		{"a creation without company", ok("POST", "/service/sps", form, "sp_name=b"), 400},
		{"another company", ok("POST", "/service/sps", form, "sp_name=b&company_id=other"), 404},
		{"a second of one name", ok("POST", "/service/sps", form, "sp_name=a&company_id=global"), 409},
		{"an unknown field", ok("PUT", "/service/sps/"+id, js, `{"name_id_attribute":"mail","x":1}`), 400},
		{"two changes at once", ok("PUT", "/service/sps/"+id, js, `{"name_id_attribute":"mail","assertion_attributes":[]}`), 400},
		{"another SSO type", ok("PUT", "/service/sps/"+id, js, `{"ssoType":"saml2","sp_name":"g","openId_connect_configuration":{"redirect_uris":["https://g/x"]}}`), 400},
		{"an unknown provider", ok("PUT", "/service/sps/nope", js, `{"name_id_attribute":"mail"}`), 404},
		{"an unknown identity provider", ok("PUT", "/service/sps", js, `{"organization":"global","id":"`+id+`","default_auth_idp":"https://t/service/idp/nope"}`), 400},
		{"an unknown scope", ok("PUT", "/service/sps", js, `{"organization":"global","id":"`+id+`","rest_api_client_secret":{"description":"d","scopes":["Root"]}}`), 400},
		{"a deletion without sp_id", ok("PUT", "/service/sps/delete", "", ""), 400},
		{"a known identity provider", ok("PUT", "/service/sps", js, `{"organization":"global","id":"`+id+`","default_auth_idp":"https://t/service/idp/`+sim.IdentityProviderID("idp")+`"}`), 200},
		{"a deletion", ok("PUT", "/service/sps/delete?sp_id="+id, "", ""), 200},
		{"a deletion again", ok("PUT", "/service/sps/delete?sp_id="+id, "", ""), 404},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}
