package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpgradeCommandBody checks the body `keb upgrade` sends for its flags:
// --target selectors ANDed within, ORed across, excludes, and the strategy.
func TestUpgradeCommandBody(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/upgrade/kyma" || r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("%s %s %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &got)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"orchestrationID": "o-1"}`))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"upgrade", "kyma", "--url", srv.URL, "--token", "tok", "--target", "account=ga,region=westeurope",
		"--target", "plan=azure", "--target-exclude", "runtime-id=r1", "--version", "2.21.0", "--channel", "fast",
		"--parallel-workers", "2", "--schedule", "maintenanceWindow"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	body, _ := json.Marshal(got)
	for _, want := range []string{`"include":[{"globalAccount":"ga","region":"westeurope"},{"planName":"azure"}]`,
		`"exclude":[{"runtimeID":"r1"}]`, `"kyma":{"channel":"fast","version":"2.21.0"}`,
		`"strategy":{"parallel":{"workers":2},"schedule":"maintenanceWindow","type":"parallel"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body %s lacks %s", body, want)
		}
	}
	for _, bad := range [][]string{{"upgrade", "kyma", "--target", "acount=x"}, {"upgrade", "cluster", "--target", "all", "--version", "1"},
		{"upgrade", "kyma"}, {"orchestrations", "show"}} {
		if code := run(append(bad, "--url", srv.URL, "--token", "tok"), &out, &errOut); code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}
