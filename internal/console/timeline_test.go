package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/events"
	"github.com/kyma-keb/keb/internal/storage"
)

func TestTimeline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	data, _ := json.Marshal(map[string]any{"stepStartedAt": map[string]time.Time{"start": at(0), "create_runtime": at(2), "check_runtime": at(5)},
		"stepRuns": map[string]int{"start": 1, "create_runtime": 1, "check_runtime": 4},
		"history":  []map[string]any{{"step": "check_runtime", "at": at(5), "kind": "wait", "reason": "Waiting for the cluster"}}})
	finished := at(30)
	ops := []storage.EventOperation{
		{Operation: storage.Operation{ID: "p1", Type: "provision", State: storage.OperationInProgress, Stage: "check_runtime",
			FinishedStages: []string{"start", "create_runtime"}, Data: data, CreatedAt: at(0)}},
		{Operation: storage.Operation{ID: "d1", Type: "deprovision", State: storage.OperationFailed, Stage: "delete_kyma", ErrorMessage: "boom",
			Temporary: true, Data: json.RawMessage(`{"stepStartedAt":{"delete_kyma":"2026-11-01T10:00:20Z"}}`), CreatedAt: at(20), FinishedAt: &finished}},
	}
	tl := timeline(events.FromOperations(ops, time.Time{}))
	if len(tl) != 2 || tl[0].ID != "d1" || tl[1].ID != "p1" {
		t.Fatalf("timeline order: %+v", tl)
	}
	p := tl[1]
	if !p.InProgress || p.Description != "Waiting for the cluster" {
		t.Errorf("running operation: %+v", p)
	}
	want := []Step{
		{Name: "start", Start: at(0), End: at(2), Done: true, Attempts: 1},
		{Name: "create_runtime", Start: at(2), End: at(5), Done: true, Attempts: 1},
		{Name: "check_runtime", Start: at(5), Running: true, Waiting: "Waiting for the cluster", Attempts: 4},
	}
	if len(p.Steps) != len(want) {
		t.Fatalf("steps: %+v", p.Steps)
	}
	for i := range want {
		got := p.Steps[i]
		if len(got.History) != map[int]int{2: 1}[i] {
			t.Errorf("step %d history: %+v", i, got.History)
		}
		got.History = nil
		if got.Name != want[i].Name || got.Start != want[i].Start || got.End != want[i].End || got.Done != want[i].Done ||
			got.Running != want[i].Running || got.Waiting != want[i].Waiting || got.Attempts != want[i].Attempts {
			t.Errorf("step %d = %+v, want %+v", i, got, want[i])
		}
	}
	d := tl[0]
	if d.Type != "deprovision (suspension)" || d.State != "failed" || d.Error != "boom" || d.InProgress {
		t.Errorf("failed suspension: %+v", d)
	}
	if len(d.Steps) != 1 || d.Steps[0].Running || d.Steps[0].End != finished || d.Steps[0].Name != "delete_kyma" {
		t.Errorf("failed operation's steps: %+v", d.Steps)
	}
}

// Each step is a bar on its operation's time axis (accepted to finished, or
// to now while it runs), and a running operation lists the pipeline's steps
// not started yet.
func TestLayout(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ops := []Operation{{Type: "provision", Created: at(0), InProgress: true, Steps: []Step{
		{Name: "start", Start: at(0), End: at(25), Done: true},
		{Name: "check_runtime", Start: at(25), Running: true, History: []events.Event{{CreatedAt: at(50)}}},
	}}}
	layout(ops, map[string][]string{"provision": {"start", "check_runtime", "apply_kyma", "check_kyma"}}, at(100))
	op := ops[0]
	if op.RunningFor != 100*time.Second || len(op.ToCome) != 2 || op.ToCome[0] != "apply_kyma" || op.ToCome[1] != "check_kyma" {
		t.Fatalf("running operation: %s, to come %v", op.RunningFor, op.ToCome)
	}
	s0, s1 := op.Steps[0], op.Steps[1]
	if s0.Left != 0 || s0.Width != 25 || s1.Left != 25 || s1.Width != 75 || len(s1.Ticks) != 1 || s1.Ticks[0] != 50 {
		t.Fatalf("bars: %+v %+v", s0, s1)
	}
	done := at(40)
	ops = []Operation{{Type: "deprovision (suspension)", Created: at(0), Finished: &done, Steps: []Step{{Name: "a", Start: at(10), End: at(20), Done: true}}}}
	layout(ops, map[string][]string{"deprovision": {"a", "b"}}, at(100))
	if s := ops[0].Steps[0]; s.Left != 25 || s.Width != 25 || ops[0].ToCome != nil || ops[0].RunningFor != 40*time.Second {
		t.Fatalf("finished operation: %+v %v", s, ops[0].ToCome)
	}
}
