package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
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

// The listing commands share one output convention: UPPER_SNAKE headers
// with AGE, --no-headers, and -o json/yaml as the page /runtimes answers.
func TestOrchestrationsListOutputs(t *testing.T) {
	created := time.Now().Add(-3*time.Hour - time.Minute)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode([]map[string]any{{"orchestrationID": "o-1", "type": "upgrade_kyma", "state": "succeeded",
			"description": "Finished 3 operations", "createdAt": created, "parameters": map[string]any{"dryRun": false}},
			{"orchestrationID": "o-2", "type": "upgrade_cluster", "state": "succeeded", "description": "Finished 1 operation",
				"createdAt": created, "parameters": map[string]any{"dryRun": true}}})
	}))
	defer srv.Close()
	list := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		fs := flag.NewFlagSet("orchestrations", flag.ContinueOnError)
		runFn := bindOrchestrations(fs, &out, &errOut)
		if err := fs.Parse(append([]string{"--url", srv.URL, "--token", "tok"}, args...)); err != nil {
			t.Fatal(err)
		}
		if err := runFn(context.Background(), fs.Args()); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String(), errOut.String()
	}

	out, errOut := list()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// A dry run never reads like a real upgrade.
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ORCHESTRATION TYPE STATE AGE DESCRIPTION" ||
		strings.Join(strings.Fields(lines[1]), " ") != "o-1 upgrade_kyma succeeded 3h Finished 3 operations" ||
		strings.Join(strings.Fields(lines[2]), " ") != "o-2 dry-run:upgrade_cluster succeeded 3h Finished 1 operation" {
		t.Errorf("table:\n%s\nstderr: %s", out, errOut)
	}
	if out, _ := list("--no-headers"); strings.Contains(out, "ORCHESTRATION") || !strings.HasPrefix(out, "o-1") {
		t.Errorf("--no-headers:\n%s", out)
	}
	if out, _ := list("-o", "wide"); !strings.Contains(out, "CREATED") || !strings.Contains(out, created.UTC().Format(time.RFC3339)) {
		t.Errorf("-o wide:\n%s", out)
	}
	for _, format := range []string{"json", "yaml"} {
		out, _ := list("--output", format)
		var got struct {
			Data []struct {
				OrchestrationID string `json:"orchestrationID"`
			} `json:"data"`
			Count, TotalCount int
		}
		if err := yaml.Unmarshal([]byte(out), &got); err != nil || len(got.Data) != 2 || got.Data[0].OrchestrationID != "o-1" ||
			got.Count != 2 || got.TotalCount != 2 {
			t.Errorf("-o %s: %+v (%v):\n%s", format, got, err, out)
		}
	}
	if out, _ := list("-o", "custom-columns=ID:.orchestrationID,STATE:.state"); strings.Join(strings.Fields(out), " ") != "ID STATE o-1 succeeded o-2 succeeded" {
		t.Errorf("custom-columns:\n%s", out)
	}
}
