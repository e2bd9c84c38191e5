package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// orch is an orchestration as GET /orchestrations/{id} shows it.
type orch struct {
	OrchestrationID string          `json:"orchestrationID"`
	State           string          `json:"state"`
	Description     string          `json:"description"`
	Parameters      json.RawMessage `json:"parameters"`
}

// orchOp is one entry of GET /orchestrations/{id}/operations.
type orchOp struct {
	OperationID            string   `json:"operationID"`
	InstanceID             string   `json:"instanceID"`
	RuntimeID              string   `json:"runtimeID"`
	State                  string   `json:"state"`
	Description            string   `json:"description"`
	DryRun                 bool     `json:"dryRun"`
	MaintenanceWindowBegin string   `json:"maintenanceWindowBegin"`
	Attempt                int      `json:"attempt"`
	PreviousOperationIDs   []string `json:"previousOperationIDs"`
}

// operator calls the orchestration API with an operator's token.
type operator struct {
	s     *stack
	token string
}

func newOperator(s *stack) *operator {
	s.t.Helper()
	tok, err := s.key.Mint(testIssuer, testAud, "operator", []string{auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite,
		auth.ScopeCLDRead}, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return &operator{s: s, token: tok}
}

func (o *operator) do(method, path, body string, out any) int {
	o.s.t.Helper()
	req, err := http.NewRequest(method, o.s.url+path, strings.NewReader(body))
	if err != nil {
		o.s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		o.s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			o.s.t.Fatalf("%s %s: %d %s: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode
}

// orchestrate POSTs an upgrade and returns the orchestration ID.
func (o *operator) orchestrate(kind, body string) string {
	o.s.t.Helper()
	var resp map[string]string
	if code := o.do(http.MethodPost, "/upgrade/"+kind, body, &resp); code != http.StatusAccepted || resp["orchestrationID"] == "" {
		o.s.t.Fatalf("POST /upgrade/%s: %d %v", kind, code, resp)
	}
	return resp["orchestrationID"]
}

func (o *operator) get(id string) orch {
	o.s.t.Helper()
	var out orch
	if code := o.do(http.MethodGet, "/orchestrations/"+id, "", &out); code != http.StatusOK {
		o.s.t.Fatalf("GET /orchestrations/%s: %d", id, code)
	}
	return out
}

func (o *operator) operations(id string) []orchOp {
	o.s.t.Helper()
	var out struct {
		Data       []orchOp `json:"data"`
		Count      int      `json:"count"`
		TotalCount int      `json:"totalCount"`
	}
	if code := o.do(http.MethodGet, "/orchestrations/"+id+"/operations", "", &out); code != http.StatusOK || out.Count != len(out.Data) {
		o.s.t.Fatalf("GET /orchestrations/%s/operations: %d %+v", id, code, out)
	}
	return out.Data
}

// wait polls an orchestration until it ends.
func (o *operator) wait(id string, within time.Duration) orch {
	o.s.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		got := o.get(id)
		switch got.State {
		case "succeeded", "failed", "canceled":
			return got
		}
		time.Sleep(300 * time.Millisecond)
	}
	o.s.t.Fatalf("orchestration %s did not end within %s: %+v", id, within, o.get(id))
	return orch{}
}

// byInstance indexes an orchestration's operations.
func byInstance(ops []orchOp) map[string]orchOp {
	m := map[string]orchOp{}
	for _, op := range ops {
		m[op.InstanceID] = op
	}
	return m
}

// TestOrchestrations drives Kyma and cluster upgrades over four runtimes
// (one suspended) on real parts: selectors, dry run, the workers bound read
// from the database, 422 for DELETE and PATCH during an upgrade, what
// last_operation and /runtimes show, one orchestration of a kind at a time
// in creation order, cancel, and retry of a failed upgrade.
func TestOrchestrations(t *testing.T) {
	var failing atomic.Value // runtime ID whose cluster upgrade fails
	failing.Store("")
	simFaults = func(rt *infrastructuremanager.Runtime) *infrasim.Fault {
		if v := rt.Spec.Shoot.Kubernetes.Version; failing.Load().(string) == rt.RuntimeID() && v != nil && *v == "1.99.0" {
			return &infrasim.Fault{Message: "simulated: Kubernetes 1.99.0 does not roll out", Permanent: true}
		}
		return nil
	}
	t.Cleanup(func() { simFaults = nil })
	// A failing upgrade waits for the infrastructure manager to recover
	// until its step's timeout: short here, yet long enough for the
	// provisionings it also bounds on a loaded 2-core machine.
	s := newStack(t, infrasim.ModeShared, 3, func(c *config.Config) {
		c.Engine.Orchestration.Poll = 200 * time.Millisecond
		c.Engine.RuntimeTimeout = time.Minute
	})
	ctx := context.Background()
	db, err := pgxpool.New(ctx, s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	op := newOperator(s)
	for _, name := range []string{"azure-orch-a", "azure-orch-b", "azure-orch-c"} {
		freshAccount(t, s.kcp, name) // one per tenant; seeded ones may be dirty from other tests
	}

	// Four runtimes: tenant A in two regions, B, and C (suspended).
	type inst struct{ id, tenant, region string }
	insts := []inst{{"orch-1", "ga-a", "westeurope"}, {"orch-2", "ga-a", "eastus"}, {"orch-3", "ga-b", "westeurope"},
		{"orch-4", "ga-c", "eastus"}}
	ops := map[string]string{}
	for _, in := range insts {
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+in.id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
			"context": {"globalaccount_id": "`+in.tenant+`", "subaccount_id": "sa-`+in.tenant+`", "user_id": "me@example.com"},
			"parameters": {"name": "`+in.id+`", "region": "`+in.region+`"}}`)
		ops[in.id] = s.accepted("provision "+in.id, code, body)
	}
	runtimeIDs := map[string]string{}
	for _, in := range insts {
		if state, desc := s.waitFor(in.id, ops[in.id], 4*time.Minute); state != "succeeded" {
			t.Fatalf("provisioning %s ended %s: %s", in.id, state, desc)
		}
		runtimeIDs[in.id] = s.runtime(in.id)["runtimeID"].(string)
	}
	code, body := s.call(http.MethodPatch, "/oauth/v2/service_instances/orch-4?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "context": {"active": false}}`)
	suspend := s.accepted("suspend", code, body)
	if state, desc := s.waitFor("orch-4", suspend, 4*time.Minute); state != "succeeded" {
		t.Fatalf("suspension ended %s: %s", state, desc)
	}
	// The maintenance window resolved at provisioning shows in /runtimes.
	if mw := s.runtime("orch-1")["maintenanceWindowBegin"]; mw != "0000-01-01T22:00:00Z" {
		t.Errorf("/runtimes maintenanceWindowBegin = %v, want the default 0000-01-01T22:00:00Z", mw)
	}
	generations := func() map[string]int64 {
		out := map[string]int64{}
		for _, in := range insts[:3] {
			rt := &infrastructuremanager.Runtime{}
			if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeIDs[in.id])}, rt); err != nil {
				t.Fatal(err)
			}
			out[in.id] = rt.Generation
		}
		return out
	}
	channel := func(id string) string {
		k := &kyma.Kyma{}
		if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(runtimeIDs[id])}, k); err != nil {
			t.Fatal(err)
		}
		return k.Spec.Channel
	}

	t.Run("bad requests name the field", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"targets": {}}`: "targets.include",
			`{"targets": {"include": [{"target": "all"}]}, "strategy": {"schedule": "someday"}}`:          "strategy.schedule",
			`{"targets": {"include": [{"target": "all"}]}, "strategy": {"parallel": {"workers": -1}}}`:    "strategy.parallel.workers",
			`{"targets": {"include": [{"target": "all"}]}, "kubernetes": {"version": "1.31"}}`:            "kubernetes",
			`{"targets": {"include": [{"target": "all"}]}, "kyma": {"version": "9.9.9"}}`:                 "kyma.version",
			`{"targets": {"include": [{"target": "all"}]}, "dryRunn": true}`:                              "dryRunn",
			`{"targets": {"include": [{}]}}`:                                                              "targets.include[0]",
			`{"targets": {"include": [{"target": "all"}]}, "strategy": {"parallel": {"workers": "two"}}}`: "strategy.parallel.workers",
		} {
			var e map[string]string
			if code := op.do(http.MethodPost, "/upgrade/kyma", body, &e); code != http.StatusBadRequest ||
				e["error"] != "BadRequest" || !strings.Contains(e["description"], field) {
				t.Errorf("POST %s: %d %v, want 400 naming %s", body, code, e, field)
			}
		}
	})

	t.Run("selectors and dry run", func(t *testing.T) {
		before := generations()
		// The seed tutorial's body (trailing commas, one selector as an
		// object, "strategies") with selectors matching nothing.
		none := op.orchestrate("kyma", `{"targets": {"include": {"runtimeID": "uuid-sdasd-sda23t-efs", "planName": "azure",},},
			"strategies": {"type": "parallel", "schedule": "maintenanceWindow", "parallel": {"workers": 5},}, "dryRun": false}`)
		if got := op.wait(none, time.Minute); got.State != "succeeded" || !strings.Contains(got.Description, "0 operations") {
			t.Errorf("selector matching nothing: %+v", got)
		}
		// AND within a selector, OR across, exclude wins.
		sel := op.orchestrate("kyma", `{"targets": {"include": [{"globalAccount": "ga-a", "region": "westeurope"},
			{"subAccount": "sa-ga-b"}], "exclude": [{"runtimeID": "`+runtimeIDs["orch-3"]+`"}]}, "dryRun": true}`)
		op.wait(sel, time.Minute)
		if got := byInstance(op.operations(sel)); len(got) != 1 || got["orch-1"].State != "succeeded" {
			t.Errorf("include ga-a∧westeurope ∨ sa-ga-b, exclude orch-3: %+v, want orch-1 only", got)
		}
		// Everything, dry run, two workers: the suspended runtime is skipped.
		all := op.orchestrate("kyma", `{"targets": {"include": [{"target": "all"}]}, "kyma": {"version": "2.99.0", "channel": "fast"},
			"strategy": {"parallel": {"workers": 2}}, "dryRun": true}`)
		got := op.wait(all, 2*time.Minute)
		if got.State != "succeeded" || !strings.Contains(got.Description, "3 succeeded, 0 failed, 1 skipped") {
			t.Errorf("dry run over all: %+v", got)
		}
		list := byInstance(op.operations(all))
		if list["orch-4"].State != "skipped" || list["orch-1"].State != "succeeded" || !list["orch-1"].DryRun {
			t.Errorf("dry run operations: %+v", list)
		}
		if after := generations(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a dry run changed Runtime CRs: generations %v, then %v", before, after)
		}
		if c := channel("orch-1"); c != "regular" {
			t.Errorf("a dry run changed the Kyma CR's channel to %q", c)
		}
	})

	t.Run("upgrade within the workers bound, 422 for DELETE and PATCH", func(t *testing.T) {
		var maxRunning atomic.Int64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				var n int64
				if err := db.QueryRow(ctx, `SELECT count(*) FROM operations WHERE type = 'upgrade_kyma' AND state = 'in progress'`).Scan(&n); err == nil && n > maxRunning.Load() {
					maxRunning.Store(n)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		gensBefore := generations()
		id := op.orchestrate("kyma", `{"targets": {"include": [{"target": "all"}]}, "kyma": {"version": "2.21.0", "channel": "fast"},
			"strategy": {"type": "parallel", "schedule": "immediate", "parallel": {"workers": 2}}}`)
		// While an instance's upgrade runs, the platform cannot delete or change it. An upgrade runs for
		// moments, so the test holds one in progress: a row lock on its operation keeps the worker's
		// save of the step's result waiting until both requests are answered (DELETE and PATCH lock the
		// instance, never the operation). Without the hold, a loaded machine let the upgrade end between
		// the DELETE and the PATCH, which then suspended the instance.
		var held, heldInstance string
		var hold pgx.Tx
		deadline := time.Now().Add(time.Minute)
		for hold == nil && time.Now().Before(deadline) {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// SKIP LOCKED: a row the worker is writing is passed over; FOR UPDATE re-reads the state of a
			// row that changed while it waited, so a held operation is one still in progress.
			err = tx.QueryRow(ctx, `SELECT operation_id, instance_id FROM operations WHERE type = 'upgrade_kyma'
				AND state = 'in progress' LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&held, &heldInstance)
			if err != nil {
				_ = tx.Rollback(ctx)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			hold = tx
		}
		if hold == nil {
			t.Fatal("no upgrade ran within a minute")
		}
		code, body := s.call(http.MethodDelete, "/oauth/v2/service_instances/"+heldInstance+"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, "")
		if code != http.StatusUnprocessableEntity || body["error"] != "ConcurrencyError" {
			t.Errorf("DELETE of %s during its upgrade %s: %d %v, want 422 ConcurrencyError", heldInstance, held, code, body)
		}
		code, body = s.call(http.MethodPatch, "/oauth/v2/service_instances/"+heldInstance+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "context": {"active": false}}`)
		if code != http.StatusUnprocessableEntity || body["error"] != "ConcurrencyError" {
			t.Errorf("PATCH of %s during its upgrade %s: %d %v, want 422 ConcurrencyError", heldInstance, held, code, body)
		}
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		got := op.wait(id, 3*time.Minute)
		close(stop)
		sampler.Wait()
		if got.State != "succeeded" || !strings.Contains(got.Description, "3 succeeded, 0 failed, 1 skipped") {
			t.Fatalf("upgrade: %+v", got)
		}
		if m := maxRunning.Load(); m > 2 || m < 1 {
			t.Errorf("at most %d upgrades ran at once, want 1 or 2 (workers: 2)", m)
		}
		t.Logf("at most %d upgrades in progress at once (workers 2)", maxRunning.Load())
		for _, in := range insts[:3] {
			rt := &infrastructuremanager.Runtime{}
			if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeIDs[in.id])}, rt); err != nil {
				t.Fatal(err)
			}
			// A Kyma upgrade leaves the Runtime CR alone: the version is
			// keb's record.
			if rt.Status.State != infrastructuremanager.StateReady || rt.Generation != gensBefore[in.id] {
				t.Errorf("Runtime CR of %s: status %+v, generation %d (was %d)", in.id, rt.Status, rt.Generation, gensBefore[in.id])
			}
			if c := channel(in.id); c != "fast" {
				t.Errorf("Kyma CR of %s: channel %q, want fast", in.id, c)
			}
		}
		// The platform and the operator see the upgrade.
		code, last := s.call(http.MethodGet, "/oauth/v2/service_instances/"+heldInstance+"/last_operation?operation="+held, "")
		if code != http.StatusOK || last["state"] != "succeeded" {
			t.Errorf("last_operation of the upgrade: %d %v", code, last)
		}
		ukList, _ := status(s.runtime(heldInstance))["upgradingKyma"].(map[string]any)
		ukData, _ := ukList["data"].([]any)
		var uk map[string]any
		if len(ukData) > 0 {
			uk, _ = ukData[0].(map[string]any)
		}
		if uk == nil || uk["operationID"] != held || uk["state"] != "succeeded" {
			t.Errorf("/runtimes upgradingKyma = %v, want operation %s succeeded", uk, held)
		}
		code, instBody := s.call(http.MethodGet, "/oauth/v2/service_instances/"+heldInstance, "")
		params, _ := instBody["parameters"].(map[string]any)
		if code != http.StatusOK || params["kymaVersion"] != "2.21.0" || params["maintenanceWindowBegin"] != "0000-01-01T22:00:00Z" {
			t.Errorf("GET instance after the upgrade: %d %v", code, instBody)
		}
		var detail struct {
			KymaConfig struct {
				Version, PreviousVersion, OverridesSecret string
				Components                                []string
			} `json:"kymaConfig"`
			FinishedStages []string `json:"finishedStages"`
		}
		if code := op.do(http.MethodGet, "/orchestrations/"+id+"/operations/"+held, "", &detail); code != http.StatusOK ||
			detail.KymaConfig.Version != "2.21.0" || detail.KymaConfig.PreviousVersion != "2.20.0" || len(detail.FinishedStages) != 4 ||
			len(detail.KymaConfig.Components) == 0 || detail.KymaConfig.OverridesSecret != "overrides-"+runtimeIDs[heldInstance] {
			t.Errorf("operation detail: %d %+v", code, detail)
		}
		// The overrides Secret carries the new version for installers.
		ov := &corev1.Secret{}
		if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: "overrides-" + runtimeIDs[heldInstance]}, ov); err != nil ||
			string(ov.Data["_kyma.version"]) != "2.21.0" || string(ov.Data["_kyma.components"]) != strings.Join(detail.KymaConfig.Components, ",") {
			t.Errorf("overrides Secret after the upgrade: %v, %v", ov.Data, err)
		}
	})

	t.Run("one orchestration of a kind at a time, in creation order", func(t *testing.T) {
		first := op.orchestrate("kyma", `{"targets": {"include": [{"target": "all"}]}, "kyma": {"version": "2.22.0"}}`)
		second := op.orchestrate("kyma", `{"targets": {"include": [{"target": "all"}]}, "kyma": {"version": "2.23.0"}}`)
		cluster := op.orchestrate("cluster", `{"targets": {"include": [{"planName": "azure"}]}, "kubernetes": {"version": "1.31.2"},
			"strategy": {"parallel": {"workers": 3}}}`)
		sawClusterAlongside := false
		for {
			a, b, c := op.get(first), op.get(second), op.get(cluster)
			if b.State != "pending" && a.State != "succeeded" {
				t.Fatalf("the second Kyma orchestration is %s while the first is %s", b.State, a.State)
			}
			if a.State == "in progress" && c.State == "in progress" {
				sawClusterAlongside = true
			}
			if b.State == "succeeded" && c.State == "succeeded" {
				break
			}
			if b.State == "failed" || c.State == "failed" || a.State == "failed" {
				t.Fatalf("orchestrations failed: %+v %+v %+v", a, b, c)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !sawClusterAlongside {
			t.Log("the cluster orchestration never overlapped the Kyma one in the samples taken")
		}
		rt := &infrastructuremanager.Runtime{}
		if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeIDs["orch-2"])}, rt); err != nil {
			t.Fatal(err)
		}
		if v := rt.Spec.Shoot.Kubernetes.Version; v == nil || *v != "1.31.2" {
			t.Errorf("orch-2 after both: kubernetes %v", v)
		}
		code, instBody := s.call(http.MethodGet, "/oauth/v2/service_instances/orch-2", "")
		if params, _ := instBody["parameters"].(map[string]any); code != http.StatusOK || params["kymaVersion"] != "2.23.0" {
			t.Errorf("orch-2 after both: GET instance %d %v", code, instBody)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		// A cluster upgrade: it waits for the infrastructure manager, long
		// enough to cancel the orchestration behind the first one.
		id := op.orchestrate("cluster", `{"targets": {"include": [{"target": "all"}]}, "kubernetes": {"version": "1.32.0"}}`)
		deadline := time.Now().Add(time.Minute)
		for len(byInstance(op.operations(id))) == 0 || op.operations(id)[0].State == "pending" {
			if time.Now().After(deadline) {
				t.Fatal("no upgrade started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		var resp map[string]string
		if code := op.do(http.MethodPut, "/orchestrations/"+id+"/cancel", "", &resp); code != http.StatusOK || resp["state"] != "canceling" {
			t.Fatalf("cancel: %d %v", code, resp)
		}
		got := op.wait(id, 2*time.Minute)
		if got.State != "canceled" || !strings.Contains(got.Description, "1 succeeded") || !strings.Contains(got.Description, "2 canceled") {
			t.Errorf("canceled orchestration: %+v", got)
		}
		if code := op.do(http.MethodPut, "/orchestrations/"+id+"/retry", "", &resp); code != http.StatusConflict {
			t.Errorf("retry of a canceled orchestration: %d, want 409", code)
		}
	})

	t.Run("a failed upgrade fails the orchestration; retry re-runs it", func(t *testing.T) {
		failing.Store(runtimeIDs["orch-2"])
		id := op.orchestrate("cluster", `{"targets": {"include": [{"target": "all"}]}, "kubernetes": {"version": "1.99.0"},
			"strategy": {"parallel": {"workers": 3}}}`)
		got := op.wait(id, 3*time.Minute) // the failing upgrade waits out its step's timeout (1 min)
		if got.State != "failed" || !strings.Contains(got.Description, "2 succeeded, 1 failed") {
			t.Fatalf("orchestration with a failing upgrade: %+v", got)
		}
		failed := byInstance(op.operations(id))["orch-2"]
		if failed.State != "failed" {
			t.Fatalf("orch-2's upgrade: %+v", failed)
		}
		// The runtime keeps working: its state stays succeeded.
		if st := status(s.runtime("orch-2"))["state"]; st != "succeeded" {
			t.Errorf("runtime state after a failed upgrade: %v", st)
		}
		// The operator fixes the cause; the infrastructure manager's next
		// reconciliation rolls the change out, and the retry finds it done.
		failing.Store("")
		deadline := time.Now().Add(time.Minute)
		for {
			rt := &infrastructuremanager.Runtime{}
			if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeIDs["orch-2"])}, rt); err != nil {
				t.Fatal(err)
			}
			if rt.Status.State == infrastructuremanager.StateReady {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("orch-2's Runtime stays %+v", rt.Status)
			}
			time.Sleep(200 * time.Millisecond)
		}
		var retry struct {
			RetryOperations []string `json:"retryOperations"`
			OldOperations   []string `json:"oldOperations"`
		}
		if code := op.do(http.MethodPut, "/orchestrations/"+id+"/retry", "", &retry); code != http.StatusAccepted ||
			len(retry.RetryOperations) != 1 || retry.OldOperations[0] != failed.OperationID {
			t.Fatalf("retry: %d %+v", code, retry)
		}
		got = op.wait(id, 2*time.Minute)
		again := byInstance(op.operations(id))["orch-2"]
		if got.State != "succeeded" || again.State != "succeeded" || again.Attempt != 2 || again.OperationID != retry.RetryOperations[0] {
			t.Errorf("after retry: %+v, orch-2 %+v", got, again)
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM operations WHERE instance_id = 'orch-2' AND type = 'upgrade_cluster'
			AND data->'upgrade'->>'orchestrationID' = $1`, id).Scan(&n); err != nil || n != 2 {
			t.Errorf("orch-2 has %d cluster upgrades of the orchestration (%v), want 2 (failed, retried)", n, err)
		}
	})

	// The list shows every orchestration, newest first.
	var list []orch
	if code := op.do(http.MethodGet, "/orchestrations?state=succeeded,failed,canceled", "", &list); code != http.StatusOK || len(list) < 8 {
		t.Errorf("GET /orchestrations: %d, %d entries", code, len(list))
	}
	var e map[string]string
	if code := op.do(http.MethodGet, "/orchestrations?state=bogus", "", &e); code != http.StatusBadRequest {
		t.Errorf("GET /orchestrations?state=bogus: %d", code)
	}
	if code := op.do(http.MethodGet, "/orchestrations/nope", "", &e); code != http.StatusNotFound {
		t.Errorf("GET unknown orchestration: %d", code)
	}
	if code := s.rawStatus(http.MethodGet, "/orchestrations"); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Errorf("GET /orchestrations with a broker token: %d, want 401/403", code)
	}
}

// rawStatus sends a request with the stack's (broker) token.
func (s *stack) rawStatus(method, path string) int {
	s.t.Helper()
	code, _ := s.call(method, path, "")
	return code
}
