package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// recordStep is a pipeline's one step: it says which operation it ran.
type recordStep struct{ ran chan string }

func (recordStep) Name() string { return "record" }

func (s recordStep) Run(_ context.Context, op *process.Operation) (process.StepResult, error) {
	s.ran <- op.ID
	return process.Done()
}

// TestAcceptIsOneRoundTripRiverWorks is issue 42's one round trip per
// accept, against River as it is: a provisioning accept sends BEGIN,
// River's job insert (through River's InsertTx), the instance, the
// operation and COMMIT in one pipeline, and the operation names the job
// River inserted (read in SQL from the sequence River's insert draws
// from). River's insert notification, rate-limited by River, is the only
// other statement it may send, after the commit. Then River works the job:
// the pipeline's step runs for that operation, and it succeeds.
//
// It fails when River's job insert or its job ID sequence change: the
// pipeline no longer finds River's insert (two round trips) or the
// operation's insert fails (no sequence of that name) or names no job.
func TestAcceptIsOneRoundTripRiverWorks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	pool := pgtest.NewPool(t)
	counted, counter := pgtest.CountingPool(t, pool)
	cipher, err := storage.NewCipher("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	queue, err := process.NewQueue(pool, process.QueueConfig{Workers: 2, JobTimeout: 30 * time.Second,
		RescueAfter: time.Minute, PollInterval: 200 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	// The accepts go through the counted pool; River's workers and the
	// engine through the other, so that only the accepts are counted.
	accepts := storage.NewStore(counted, cipher, queue)
	ran := make(chan string, 4)
	engine := process.NewEngine(storage.NewStore(pool, cipher, queue), map[storage.OperationType]process.Pipeline{
		storage.OperationTypeProvision: {Steps: []process.Step{recordStep{ran}}, Done: "done"}}, log)
	if err := queue.Work(engine); err != nil {
		t.Fatal(err)
	}

	accept := func(id string) {
		t.Helper()
		err := accepts.CreateProvisioning(ctx, storage.Instance{InstanceID: id, RuntimeID: "rt-" + id, GlobalAccountID: "ga-" + id,
			SubAccountID: "sa", UserID: "u@example.com", ServiceID: "svc", PlanID: "plan", PlanName: "azure", PlatformRegion: "cf-eu10",
			Provider: "azure", ProviderRegion: "westeurope", Parameters: []byte(`{"name":"n"}`), Context: []byte(`{}`)},
			storage.Operation{ID: "op-" + id, InstanceID: id, Type: storage.OperationTypeProvision, State: storage.OperationInProgress,
				Description: "accepted", Deadline: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatalf("accept of %s: %v", id, err)
		}
	}
	// River asks the server's version once per driver, on its first insert.
	accept("warm")
	counter.RoundTrips()
	accept("inst-1")
	trips := counter.RoundTrips()
	notify := regexp.MustCompile(`(?i)pg_notify`)
	var writes [][]string
	for _, trip := range trips {
		if len(trip) == 1 && notify.MatchString(trip[0]) {
			continue // River's insert notification, after the commit
		}
		writes = append(writes, trip)
	}
	if len(writes) != 1 {
		t.Fatalf("the accept took %d round trips besides River's notification, want 1:\n%s", len(writes), describe(trips))
	}
	want := []*regexp.Regexp{regexp.MustCompile(`(?i)^begin$`), regexp.MustCompile(`(?is)insert\s+into\s+\S*river_job\s*\(`),
		regexp.MustCompile(`(?is)^insert into instances`), regexp.MustCompile(`(?is)^insert into operations`), regexp.MustCompile(`(?i)^commit$`)}
	if len(writes[0]) != len(want) {
		t.Fatalf("the accept's round trip: %s; want BEGIN, River's insert, the instance, the operation, COMMIT", describe(writes))
	}
	for i, re := range want {
		if !re.MatchString(strings.TrimSpace(writes[0][i])) {
			t.Fatalf("statement %d of the accept's round trip is %.80q, want one matching %s", i+1, writes[0][i], re)
		}
	}

	var jobID, riverJob int64
	var kind, state string
	if err := pool.QueryRow(ctx, `SELECT o.job_id, j.id, j.kind, j.state FROM operations o
		JOIN river_job j ON j.args->>'operation_id' = o.operation_id WHERE o.operation_id = 'op-inst-1'`).Scan(&jobID, &riverJob, &kind, &state); err != nil {
		t.Fatalf("the operation and its River job: %v", err)
	}
	if jobID != riverJob {
		t.Fatalf("the operation names job %d; River's job for it is %d", jobID, riverJob)
	}

	// A second accept of the ID: the instance's insert, behind River's,
	// fails; its answer is the instance's (not River's), and River's job
	// is rolled back with it.
	err = accepts.CreateProvisioning(ctx, storage.Instance{InstanceID: "inst-1", RuntimeID: "rt-2", GlobalAccountID: "ga",
		ServiceID: "svc", PlanID: "plan", PlanName: "azure", Parameters: []byte(`{}`), Context: []byte(`{}`)},
		storage.Operation{ID: "op-again", InstanceID: "inst-1", Type: storage.OperationTypeProvision, State: storage.OperationInProgress,
			Deadline: time.Now().Add(time.Hour)})
	if !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("a second accept of inst-1: %v, want ErrAlreadyExists", err)
	}
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'operation_id' = 'op-again'`).Scan(&jobs); err != nil || jobs != 0 {
		t.Fatalf("%d jobs (%v) of the refused accept, want none", jobs, err)
	}

	if err := queue.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = queue.Stop(context.Background()) })
	worked := map[string]bool{}
	for !worked["op-inst-1"] {
		select {
		case id := <-ran:
			worked[id] = true
		case <-ctx.Done():
			t.Fatalf("River did not work job %d (%s, %s) of the operation", riverJob, kind, state)
		}
	}
	for {
		op, err := accepts.Operation(ctx, "inst-1", "op-inst-1")
		if err != nil {
			t.Fatal(err)
		}
		if op.State == storage.OperationSucceeded {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the operation stayed %s after its step ran", op.State)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func describe(trips [][]string) string {
	var b strings.Builder
	for i, trip := range trips {
		fmt.Fprintf(&b, "  round trip %d:", i+1)
		for _, sql := range trip {
			flat := strings.Join(strings.Fields(sql), " ")
			fmt.Fprintf(&b, " [%s]", flat[:min(60, len(flat))])
		}
		b.WriteString("\n")
	}
	return b.String()
}
