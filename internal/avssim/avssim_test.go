package avssim_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/avssim"
)

// TestStrict: the stand-in refuses what AVS refuses — a token request
// with a client secret or the wrong password, an API call without a token,
// a threshold that is a number, an unknown field, a status AVS does not
// know, an unknown parent.
func TestStrict(t *testing.T) {
	t.Parallel()
	sim := avssim.New(avssim.Options{ClientID: "cid", Username: "user", Password: "pw", Parents: []int64{40}})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	token := func(id, secret, password string) (int, string) {
		form := url.Values{"grant_type": {"password"}, "username": {"user"}, "password": {password}}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+avssim.TokenPath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := token("cid", "secret", "pw"); code != http.StatusUnauthorized {
		t.Errorf("a client secret: %d, want 401", code)
	}
	if code, _ := token("cid", "", "wrong"); code != http.StatusBadRequest {
		t.Errorf("a wrong password: %d, want 400", code)
	}
	code, body := token("cid", "", "pw")
	if code != http.StatusOK {
		t.Fatalf("token: %d %s", code, body)
	}
	tok := body[strings.Index(body, `"access_token":"`)+16:]
	tok = tok[:strings.Index(tok, `"`)]
	call := func(method, path, auth, body string) int {
		req, _ := http.NewRequest(method, srv.URL+avssim.APIPath+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	valid := `{"definition_type":"BASIC","name":"n","description":"","service":"n","url":"","check_type":"","interval":60,` +
		`"tester_access_id":40,"timeout":30000,"read_only":false,"content_check":"error","content_check_type":"NOT_CONTAINS",` +
		`"threshold":"30000","group_id":40,"visibility":"PUBLIC","parent_id":40,"tags":[]}`
	for _, c := range []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"no token", "GET", "/40", "", "", http.StatusUnauthorized},
		{"an unknown token", "GET", "/40", "forged", "", http.StatusUnauthorized},
		{"a numeric threshold", "POST", "", tok, strings.Replace(valid, `"30000","group_id"`, `30000,"group_id"`, 1), http.StatusBadRequest},
		{"an unknown field", "POST", "", tok, strings.Replace(valid, `"tags":[]`, `"tags":[],"extra":1`, 1), http.StatusBadRequest},
		{"an unknown parent", "POST", "", tok, strings.Replace(valid, `"parent_id":40`, `"parent_id":7`, 1), http.StatusBadRequest},
		{"a name over 80", "POST", "", tok, strings.Replace(valid, `"name":"n"`, `"name":"`+strings.Repeat("n", 81)+`"`, 1), http.StatusBadRequest},
		{"an unknown status", "PUT", "/40/lifecycle", tok, `"PAUSED"`, http.StatusBadRequest},
		{"a status not a string", "PUT", "/40/lifecycle", tok, `{"status":"ACTIVE"}`, http.StatusBadRequest},
		{"an unknown evaluation", "DELETE", "/12345", tok, "", http.StatusNotFound},
		{"valid", "POST", "", tok, valid, http.StatusOK},
	} {
		if got := call(c.method, c.path, c.auth, c.body); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
