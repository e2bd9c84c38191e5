package deprovisioning_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// observed records what the engine tells its Observer.
type observed struct {
	mu       sync.Mutex
	skipped  []process.Leftover
	finished []process.Finished
}

func (o *observed) StepRan(storage.OperationType, string, string, string, time.Duration) {}
func (o *observed) OperationRunning(storage.Operation, storage.Instance)                 {}
func (o *observed) StepSkipped(_ storage.OperationType, l process.Leftover) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skipped = append(o.skipped, l)
}
func (o *observed) OperationFinished(f process.Finished) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, f)
}

// stackFixture is engineFixture with the pipeline on the package's real
// kube-apiserver as its control plane.
func stackFixture(t *testing.T, ns string) (*engineFixture, *observed) {
	t.Helper()
	f := newEngineFixture(t)
	log := logrus.New()
	log.SetOutput(io.Discard)
	cfg := testConfig(ns)
	cfg.SkipAfter = 5 * time.Minute
	cfg.RemovalTimeout = time.Hour
	// The azure plan is a shared one here: this test is about the CRs, not
	// about the account pool.
	cfg.SharedPlanIDs = []string{"plan-azure"}
	f.engine = process.NewEngine(f.store, map[storage.OperationType]process.Pipeline{
		storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprovisioning.Deps{Config: cfg, Store: f.store, KCP: kcpClient(t)}),
	}, log)
	obs := &observed{}
	f.engine.Observer = obs
	return f, obs
}

// backdate makes a step look as if it had started long ago: the step's
// bounded retries are over at its next run.
func (f *engineFixture) backdate(opID, step string) {
	f.t.Helper()
	f.exec(`UPDATE operations SET data = jsonb_set(data, ARRAY['stepStartedAt', $2::text], to_jsonb($3::text))
		WHERE operation_id = $1`, opID, step, time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339Nano))
}

// waits runs the operation and expects it to wait.
func (f *engineFixture) waits(opID string) {
	f.t.Helper()
	out, err := f.engine.Process(f.ctx, opID)
	if err != nil || out.RetryAfter == 0 {
		f.t.Fatalf("Process(%s) = %+v, %v; want a wait", opID, out, err)
	}
}

// TestKymaCRThatNeverGoesAway runs the deprovisioning pipeline with the
// engine on PostgreSQL and a kube-apiserver, for a runtime whose Kyma CR
// holds a finalizer nobody removes (Lifecycle Manager cannot reach the
// runtime, say): once the bounded retries of delete_kyma are over, the step
// is skipped, the cluster is deleted all the same and the instance archived,
// and what was left behind is in the archive, in last_operation's answer
// and told to the Observer (metrics). Only the cluster's own deletion fails
// a deprovisioning, and says the infrastructure manager did it.
func TestKymaCRThatNeverGoesAway(t *testing.T) {
	t.Parallel()
	for _, clusterStuck := range []bool{false, true} {
		name := "cluster deleted"
		if clusterStuck {
			name = "cluster never deleted: the operation fails, naming the infrastructure manager"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			f, obs := stackFixture(t, ns)
			instanceID, runtimeID := "inst-"+uuid.NewString()[:8], uuid.NewString()
			opID := f.deprovisioning(instanceID, false, "initialization")
			f.exec(`UPDATE instances SET runtime_id = $2 WHERE instance_id = $1`, instanceID, runtimeID)

			k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kyma.Name(runtimeID),
				Finalizers: []string{holdFinalizer}}, Spec: kyma.KymaSpec{Channel: "regular"}}
			if err := c.Create(f.ctx, k); err != nil {
				t.Fatalf("creating Kyma CR: %v", err)
			}
			rt := runtimetest.Runtime(ns, runtimeID)
			if clusterStuck {
				rt.Finalizers = []string{holdFinalizer}
			}
			if err := c.Create(f.ctx, rt); err != nil {
				t.Fatalf("creating Runtime CR: %v", err)
			}

			f.waits(opID) // delete_kyma waits for the CR to go
			if ok, deleting := exists(t, rt); !ok || deleting {
				t.Fatalf("the cluster's deletion began before the Kyma CR's retries were over")
			}
			f.backdate(opID, "delete_kyma")
			if !clusterStuck {
				f.process(opID)
				checkArchivedWithLeftover(t, f, instanceID, opID, ns, runtimeID)
			} else {
				f.waits(opID) // delete_kyma skipped; delete_runtime waits
				f.backdate(opID, "delete_runtime")
				f.process(opID)
				var state, desc string
				if err := f.store.Pool().QueryRow(f.ctx, `SELECT state, description FROM operations WHERE operation_id = $1`,
					opID).Scan(&state, &desc); err != nil {
					t.Fatal(err)
				}
				if state != string(storage.OperationFailed) {
					t.Fatalf("state %s, want failed", state)
				}
				for _, want := range []string{"step delete_runtime timed out", "[infrastructure-manager: err_keb_timeout]"} {
					if !strings.Contains(desc, want) {
						t.Errorf("description %q lacks %q", desc, want)
					}
				}
				if len(obs.finished) != 1 || obs.finished[0].Category != process.CategoryInfrastructureManager ||
					obs.finished[0].Reason != process.ReasonTimeout || len(obs.finished[0].Leftovers) != 1 {
					t.Errorf("observer told %+v, want one failure by the infrastructure manager with one leftover", obs.finished)
				}
			}
			if ok, deleting := exists(t, k); !ok || !deleting {
				t.Errorf("Kyma CR: exists %v, being deleted %v; want it left, being deleted", ok, deleting)
			}
			if len(obs.skipped) != 1 || obs.skipped[0].Step != "delete_kyma" ||
				obs.skipped[0].Category != process.CategoryLifecycleManager || obs.skipped[0].Reason != process.ReasonTimeout {
				t.Errorf("observer told of skips %+v, want delete_kyma by lifecycle-manager, err_keb_timeout", obs.skipped)
			}
		})
	}
}

func checkArchivedWithLeftover(t *testing.T, f *engineFixture, instanceID, opID, ns, runtimeID string) {
	t.Helper()
	if inst, ops := f.live(instanceID); inst != 0 || ops != 0 {
		t.Fatalf("%d instances, %d operations left; want the instance archived", inst, ops)
	}
	rt := runtimetest.Runtime(ns, runtimeID)
	if ok, _ := exists(t, rt); ok {
		t.Error("the Runtime CR is still there: the cluster was not deleted")
	}
	a, err := f.store.Archived(f.ctx, instanceID)
	if err != nil {
		t.Fatalf("Archived: %v", err)
	}
	var left []process.Leftover
	if err := json.Unmarshal(a.Leftovers, &left); err != nil {
		t.Fatalf("archived leftovers %s: %v", a.Leftovers, err)
	}
	wantWhat := "the Kyma CR " + ns + "/" + kyma.Name(runtimeID)
	if len(left) != 1 || left[0].Step != "delete_kyma" || left[0].What != wantWhat ||
		left[0].Category != process.CategoryLifecycleManager {
		t.Errorf("archived leftovers %+v, want the Kyma CR left by delete_kyma", left)
	}
	if a.LastDeprovisioningID != opID {
		t.Errorf("last deprovisioning %s, want %s", a.LastDeprovisioningID, opID)
	}
	for _, want := range []string{"Operation succeeded: the runtime is deprovisioned; left behind: " + wantWhat,
		"delete_kyma: gave up after 5m0s: Waiting for Kyma to be uninstalled"} {
		if !strings.Contains(a.DeprovisioningDescription, want) {
			t.Errorf("archived description %q lacks %q", a.DeprovisioningDescription, want)
		}
	}
}

// releases records MarkDirty calls (the account pool is exercised by its own
// tests and the e2e suite).
type releases struct {
	mu    sync.Mutex
	calls []string
}

func (r *releases) MarkDirty(_ context.Context, pool hyperscaler.Pool, tenant string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, pool.Type+"/"+tenant)
	return nil
}

// TestLeftoversRetried: the leader's job retries what a deprovisioning left
// behind: a Kyma CR still held stays a leftover until it is gone, an
// unreleased account is released, and what was in the cluster is crossed
// off (the cluster is deleted before an instance is archived).
func TestLeftoversRetried(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := kcpClient(t)
	f := newEngineFixture(t)
	runtimeID := uuid.NewString()
	k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kyma.Name(runtimeID),
		Finalizers: []string{holdFinalizer}}, Spec: kyma.KymaSpec{Channel: "regular"}}
	if err := c.Create(f.ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(f.ctx, k); err != nil { // as the skipped delete_kyma did
		t.Fatal(err)
	}
	left := []process.Leftover{
		{Step: "remove_bindings", What: "the service bindings' ServiceAccounts in the runtime"},
		{Step: "delete_kyma", What: "the Kyma CR"},
		{Step: "release_hyperscaler_secret", What: "the hyperscaler account"},
	}
	raw, _ := json.Marshal(left)
	if err := f.store.ArchiveAndRemove(f.ctx, storage.ArchivedInstance{InstanceID: "inst-left", RuntimeID: runtimeID,
		GlobalAccountID: "ga-left", SubAccountID: "sa-left", PlanID: "plan-azure", PlanName: "azure", Provider: "azure",
		LastDeprovisioningID: "dep-left", InstanceCreatedAt: time.Now(), DeprovisioningStartedAt: time.Now(),
		DeprovisioningDescription: "Operation succeeded: the runtime is deprovisioned; left behind: …", Leftovers: raw}); err != nil {
		t.Fatal(err)
	}
	acc := &releases{}
	job := &deprovisioning.Leftovers{Store: f.store, KCP: c, Accounts: acc, Config: testConfig(ns)}
	res, err := job.Run(f.ctx)
	if err != nil || res.Instances != 1 || res.Resolved != 2 || res.Remaining != 1 {
		t.Fatalf("first run: %+v, %v; want the Kyma CR left, the rest resolved", res, err)
	}
	if fmt.Sprint(acc.calls) != "[azure/ga-left]" {
		t.Errorf("accounts released %v, want azure/ga-left", acc.calls)
	}
	a, err := f.store.Archived(f.ctx, "inst-left")
	if err != nil {
		t.Fatal(err)
	}
	var still []process.Leftover
	if err := json.Unmarshal(a.Leftovers, &still); err != nil || len(still) != 1 || still[0].Step != "delete_kyma" {
		t.Fatalf("leftovers after the first run: %s (%v)", a.Leftovers, err)
	}
	releaseFinalizers(t, k)
	if res, err = job.Run(f.ctx); err != nil || res.Resolved != 1 || res.Remaining != 0 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	if a, _ = f.store.Archived(f.ctx, "inst-left"); a.Leftovers != nil {
		t.Errorf("leftovers %s after everything was gone, want none", a.Leftovers)
	}
	if res, err = job.Run(f.ctx); err != nil || res.Instances != 0 {
		t.Errorf("third run: %+v, %v; want nothing to do", res, err)
	}
}
