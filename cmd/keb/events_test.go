package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/events"
)

// keb events lists an instance's events as GET /events answers them, with
// how long each step and the operation took, and sends the filters asked for.
func TestEventsWithDurations(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	ev := func(kind events.Kind, step string, at time.Duration, msg string) events.Event {
		return events.Event{ID: string(kind) + step, Level: events.LevelInfo, InstanceID: "inst-1", OperationID: "op-12345678-aaaa",
			OperationType: "provision", Kind: kind, Step: step, Message: msg, CreatedAt: t0.Add(at)}
	}
	list := []events.Event{
		ev(events.OperationAccepted, "", 0, "provisioning accepted"),
		ev(events.StepStarted, "create_runtime", 2*time.Second, "started"),
		ev(events.StepWaiting, "create_runtime", 3*time.Second, "waiting for the cluster"),
		ev(events.StepDone, "create_runtime", 4*time.Minute+5*time.Second, "done"),
		ev(events.StepStarted, "create_kyma", 4*time.Minute+5*time.Second, "started"),
		ev(events.StepDone, "create_kyma", 4*time.Minute+5*time.Second+850*time.Millisecond, "done"),
		ev(events.OperationSucceeded, "", 5*time.Minute, "succeeded"),
	}
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/events" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":"NotFound","description":"no"}`, http.StatusNotFound)
			return
		}
		gotQuery = r.URL.RawQuery
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()

	run := func(args ...string) (string, error) {
		fs := flag.NewFlagSet("events", flag.ContinueOnError)
		var out, errOut bytes.Buffer
		runFn := bindEvents(fs, &out, &errOut)
		if err := fs.Parse(append([]string{"--url", srv.URL, "--token", "tok"}, args...)); err != nil {
			return "", err
		}
		err := runFn(context.Background(), fs.Args())
		return out.String(), err
	}
	out, err := run("-i", "inst-1")
	if err != nil {
		t.Fatal(err)
	}
	if gotQuery != "instance_ids=inst-1&page_size=1000" {
		t.Errorf("query %q", gotQuery)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(list)+1 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("table:\n%s", out)
	}
	for i, want := range map[int]string{4: "4m03s", 6: "850ms", 7: "5m00s"} {
		if f := strings.Fields(lines[i]); len(f) < 7 || f[6] != want || f[2] != "op-12345" {
			t.Errorf("line %d: %q, want operation op-12345 and TOOK %s", i, lines[i], want)
		}
	}
	if f := strings.Fields(lines[3]); f[6] != "-" {
		t.Errorf("a wait has no duration: %q", lines[3])
	}

	out, err = run("-i", "inst-1", "-o", "json")
	var rows []eventRow
	if err != nil || json.Unmarshal([]byte(out), &struct{ Data *[]eventRow }{&rows}) != nil || len(rows) != len(list) || rows[3].Took != "4m03s" {
		t.Errorf("-o json: %v\n%s", err, out)
	}

	if _, err := run(); err == nil || !strings.Contains(err.Error(), "-i") {
		t.Errorf("no filter: %v", err)
	}
}
