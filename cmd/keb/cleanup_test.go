package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestCleanupSubaccountsAgainstDevDir runs `keb cleanup subaccounts` with no
// database flag against a dev directory, as after `make run`: the database,
// secret key and CIS stand-in come from the running keb dev's records.
func TestCleanupSubaccountsAgainstDevDir(t *testing.T) {
	for _, env := range []string{"APP_DATABASE_URL", "DATABASE_URL", "APP_CIS_EVENT_SERVICE_URL", "APP_DATABASE_SECRET_KEY"} {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dbURL := pgtest.NewDatabase(t)
	stub := cisstub.New("dev-id", "dev-secret")
	srv := httptest.NewServer(stub.Handler(nil))
	defer srv.Close()
	dir := t.TempDir()
	const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b, _ := json.Marshal(devstack.Endpoints{DatabaseURL: dbURL, CISEventsURL: srv.URL + cisstub.EventsV1Path,
		CISAuthURL: srv.URL + cisstub.TokenPath, CISClientID: "dev-id", CISClientSecret: "dev-secret", CISVersion: "v1.0"})
	for name, content := range map[string][]byte{devstack.EndpointsFile: b, "secret-key": []byte(key + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cipher, err := storage.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	dbPool, err := storage.Open(ctx, dbURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dbPool.Close()
	store := storage.NewStore(dbPool, cipher, nil)
	inst := storage.Instance{InstanceID: "inst-1", GlobalAccountID: "ga", SubAccountID: "sa-gone", UserID: "u",
		ServiceID: catalog.ServiceID, PlanID: catalog.AzurePlanID, PlanName: catalog.AzurePlanName, PlatformRegion: "cf-eu10",
		Provider: "azure", ProviderRegion: "westeurope", Parameters: []byte(`{}`), Context: []byte(`{}`)}
	if err := store.CreateProvisioning(ctx, inst, storage.Operation{ID: "op-1", InstanceID: "inst-1",
		Type: storage.OperationTypeProvision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	stub.Add("sa-gone")

	cleanupRun := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		fs := flag.NewFlagSet("keb cleanup", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		runFn := bindCleanup(fs, &out, &out)
		pos, err := parseInterspersed(fs, append(args, "--dir", dir, "--log-level", "error"))
		if err != nil {
			t.Fatal(err)
		}
		if err := runFn(ctx, pos); err != nil {
			t.Fatalf("keb cleanup %v: %v", args, err)
		}
		return out.String()
	}
	// As a process: on a terminal only the result, the log lines with -v.
	for _, verbose := range []bool{false, true} {
		args := []string{"cleanup", "subaccounts", "--dry-run", "--dir", dir}
		if verbose {
			args = append(args, "-v")
		}
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), envRunAsKeb+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("keb %v: %v\n%s", args, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "would trigger") {
			t.Errorf("keb %v printed:\n%s", args, stdout.String())
		}
		if logged := strings.Contains(stderr.String(), "subaccount cleanup"); logged != verbose {
			t.Errorf("keb %v: stderr %q; want the log lines only with -v", args, stderr.String())
		}
	}

	// -o json: the items as a page on stdout, the summary on stderr.
	{
		var out, errOut bytes.Buffer
		fs := flag.NewFlagSet("keb cleanup", flag.ContinueOnError)
		runFn := bindCleanup(fs, &out, &errOut)
		pos, err := parseInterspersed(fs, []string{"subaccounts", "--dry-run", "-o", "json", "--dir", dir})
		if err != nil {
			t.Fatal(err)
		}
		if err := runFn(ctx, pos); err != nil {
			t.Fatal(err)
		}
		var page struct {
			Data  []struct{ InstanceID, SubaccountID, Outcome string }
			Count int
		}
		if err := json.Unmarshal(out.Bytes(), &page); err != nil || page.Count != 1 || len(page.Data) != 1 ||
			page.Data[0].InstanceID != "inst-1" || page.Data[0].Outcome != "would trigger" {
			t.Fatalf("-o json printed %s (%v)", out.String(), err)
		}
		if !strings.Contains(errOut.String(), "1 would trigger") || !strings.Contains(errOut.String(), "dry run") {
			t.Fatalf("-o json: summary on stderr %q", errOut.String())
		}
	}

	out := cleanupRun("subaccounts", "--dry-run")
	if !strings.Contains(out, "inst-1") || !strings.Contains(out, "would trigger") || !strings.Contains(out, "1 events fetched") {
		t.Fatalf("dry run printed:\n%s", out)
	}
	if st, _ := store.Instance(ctx, "inst-1"); st.State != storage.RuntimeProvisioning {
		t.Fatalf("the dry run changed the instance to %s", st.State)
	}
	out = cleanupRun("subaccounts")
	last, err := store.LastOperation(ctx, "inst-1")
	if err != nil || last.Type != storage.OperationTypeDeprovision || !strings.Contains(out, last.ID) {
		t.Fatalf("run printed:\n%s\nlast operation %+v, %v; want the deprovisioning it printed", out, last, err)
	}
	if out := cleanupRun("subaccounts"); !strings.Contains(out, "0 events fetched") {
		t.Fatalf("second run printed:\n%s", out)
	}
}

// keb cleanup environments prints its decisions in the listing commands'
// conventions: AGE as kubectl writes it, -o yaml as a page, the summary
// beside the table or on stderr.
func TestEnvironmentsReportOutputs(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rep := cleanup.EnvironmentsReport{DryRun: true, Decisions: []cleanup.Decision{
		{RuntimeID: "rt-1", InstanceID: "inst-1", Age: 26 * time.Hour, Action: cleanup.ActionDeprovision, Reason: "older than 24h0m0s"},
		{RuntimeID: "rt-2", Age: 90 * time.Second, Action: cleanup.ActionKeep, Reason: "younger than the maximum age 24h0m0s"},
	}}
	var out, summary bytes.Buffer
	if err := printEnvironmentsReport(printer{&out, &out, listOutput{format: "table"}}, rep, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "RUNTIME INSTANCE AGE ACTION REASON" ||
		strings.Join(strings.Fields(lines[1])[:4], " ") != "rt-1 inst-1 26h deprovision" ||
		strings.Join(strings.Fields(lines[2])[:4], " ") != "rt-2 - 1m keep" || !strings.HasPrefix(lines[3], "dry run:") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := printEnvironmentsReport(printer{&out, &summary, listOutput{format: "yaml"}}, rep, now); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Data []struct {
			RuntimeID string    `json:"runtimeID"`
			CreatedAt time.Time `json:"createdAt"`
		} `json:"data"`
		TotalCount int `json:"totalCount"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &page); err != nil || page.TotalCount != 2 || page.Data[0].RuntimeID != "rt-1" ||
		!page.Data[0].CreatedAt.Equal(now.Add(-26*time.Hour)) {
		t.Errorf("-o yaml: %+v (%v)\n%s", page, err, out.String())
	}
	if !strings.HasPrefix(summary.String(), "dry run: 1 runtimes would be cleaned up") {
		t.Errorf("summary %q", summary.String())
	}
}
