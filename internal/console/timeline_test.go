package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

func TestTimeline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	data, _ := json.Marshal(map[string]any{"stepStartedAt": map[string]time.Time{"start": at(0), "create_runtime": at(2), "check_runtime": at(5)},
		"stepRuns": map[string]int{"start": 1, "create_runtime": 1, "check_runtime": 4}, "failures": 2})
	finished := at(30)
	ops := []storage.Operation{
		{ID: "p1", Type: "provision", State: storage.OperationInProgress, Stage: "check_runtime", Description: "Waiting for the cluster",
			FinishedStages: []string{"start", "create_runtime"}, Data: data, CreatedAt: at(0)},
		{ID: "d1", Type: "deprovision", State: storage.OperationFailed, Stage: "delete_kyma", ErrorMessage: "boom",
			Data: json.RawMessage(`{"stepStartedAt":{"delete_kyma":"2026-11-01T10:00:20Z"}}`), CreatedAt: at(20), FinishedAt: &finished},
	}
	tl := timeline(ops, at(40))
	if len(tl) != 2 || tl[0].ID != "d1" || tl[1].ID != "p1" {
		t.Fatalf("timeline order: %+v", tl)
	}
	p := tl[1]
	want := []Step{
		{Name: "start", Start: at(0), End: at(2), Done: true, Attempts: 1},
		{Name: "create_runtime", Start: at(2), End: at(5), Done: true, Attempts: 1},
		{Name: "check_runtime", Start: at(5), Running: true, Waiting: "Waiting for the cluster", Failures: 2, Attempts: 4},
	}
	if len(p.Steps) != len(want) {
		t.Fatalf("steps: %+v", p.Steps)
	}
	for i := range want {
		if p.Steps[i] != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, p.Steps[i], want[i])
		}
	}
	if d := tl[0]; len(d.Steps) != 1 || d.Steps[0].Running || d.Steps[0].End != finished || d.Steps[0].Name != "delete_kyma" {
		t.Errorf("failed operation's steps: %+v", d.Steps)
	}
}
