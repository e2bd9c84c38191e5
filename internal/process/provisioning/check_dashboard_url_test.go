package provisioning_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/director"
	"github.com/kyma-keb/keb/internal/directorsim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// registry is the Director stand-in's runtimes, as a test registers them.
type registry struct {
	mu sync.Mutex
	m  map[string]directorsim.Runtime
}

func (r *registry) set(id string, rt directorsim.Runtime) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = rt
}

func (r *registry) lookup(_ context.Context, id string) (directorsim.Runtime, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.m[id]
	return rt, ok
}

// TestCheckDashboardURL runs the step against the Director stand-in: it
// waits while the Director has no answer (unknown runtime, another tenant,
// no status, no label), succeeds on keb's dashboard URL, and fails on a
// FAILED runtime or another URL; the query carries the tenant header and
// upstream's GraphQL text.
func TestCheckDashboardURL(t *testing.T) {
	t.Parallel()
	reg := &registry{m: map[string]directorsim.Runtime{}}
	sim := directorsim.New("cid", "secret", reg.lookup)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := director.NewClient(director.Config{URL: srv.URL + directorsim.GraphQLPath, OAuthTokenURL: srv.URL + directorsim.TokenPath,
		OAuthClientID: "cid", OAuthClientSecret: "secret", OAuthScope: "runtime:read runtime:write"}, srv.Client(), nil)
	step := &provisioning.CheckDashboardURL{Director: client, ShootDomain: "kyma.example.com"}
	inst := processtest.Instance(t, catalog.AWSPlanID)
	inst.RuntimeID, inst.ShootName = "rt-1", "c-1234567"
	op := processtest.Operation(storage.OperationTypeProvision, inst)
	want := "https://console.c-1234567.kyma.example.com"
	run := func(what string, outcome processtest.Outcome) process.StepResult {
		t.Helper()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, what, outcome, res, err)
		return res
	}
	run("unknown runtime", processtest.Retry)
	reg.set("rt-1", directorsim.Runtime{Tenant: "another-ga", ConsoleURL: want, Condition: "READY"})
	run("another tenant's", processtest.Retry)
	reg.set("rt-1", directorsim.Runtime{Tenant: inst.GlobalAccountID})
	run("no status", processtest.Retry)
	reg.set("rt-1", directorsim.Runtime{Tenant: inst.GlobalAccountID, Condition: "READY"})
	run("no label", processtest.Retry)
	reg.set("rt-1", directorsim.Runtime{Tenant: inst.GlobalAccountID, Condition: "READY", ConsoleURL: want})
	run("registered", processtest.Done)
	reg.set("rt-1", directorsim.Runtime{Tenant: inst.GlobalAccountID, Condition: "READY", ConsoleURL: "https://console.other.example.com"})
	if res := run("another URL", processtest.Failure); !strings.Contains(res.Failure.Error(), "not "+want) {
		t.Errorf("failure %v", res.Failure)
	}
	reg.set("rt-1", directorsim.Runtime{Tenant: inst.GlobalAccountID, Condition: "FAILED"})
	run("FAILED", processtest.Failure)
	var q struct{ Query string }
	if err := json.Unmarshal([]byte(sim.Requests()[0].Body), &q); err != nil ||
		q.Query != `query { result: runtime(id: "rt-1") { id labels(key: "runtime_consoleUrl") status { condition } } }` {
		t.Errorf("query %s", sim.Requests()[0].Body)
	}
	if _, ok := process.StepComponent(step.Name()); !ok {
		t.Errorf("%s has no component", step.Name())
	}
	if got := stepNames(provisioning.Deps{Director: client}); got[5] != "check_runtime" || got[6] != "check_dashboard_url" {
		t.Errorf("with the Director: %v, want check_dashboard_url after check_runtime", got)
	}
}
