package edpsim_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/edpsim"
)

// TestTokenStrict: the stand-in hands a token only to
// edp-namespace;<namespace> with its secret, the client-credentials grant and
// both scopes, and refuses API calls without one or for another namespace.
func TestTokenStrict(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(edpsim.New("kyma-dev", "s3cret").Handler())
	t.Cleanup(srv.Close)
	token := func(id, secret, grant, scope string) int {
		form := url.Values{"grant_type": {grant}, "scope": {scope}}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+edpsim.TokenPath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	both := "edp-namespace.read edp-namespace.update"
	for _, c := range []struct {
		name, id, secret, grant, scope string
		want                           int
	}{
		{"valid", "edp-namespace;kyma-dev", "s3cret", "client_credentials", both, 200},
		{"another namespace's client", "edp-namespace;other", "s3cret", "client_credentials", both, 401},
		{"a wrong secret", "edp-namespace;kyma-dev", "nope", "client_credentials", both, 401},
		{"a password grant", "edp-namespace;kyma-dev", "s3cret", "password", both, 400},
		{"one scope", "edp-namespace;kyma-dev", "s3cret", "client_credentials", "edp-namespace.read", 400},
	} {
		if got := token(c.id, c.secret, c.grant, c.scope); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	resp, err := srv.Client().Post(srv.URL+"/namespaces/kyma-dev/dataTenants", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
}
