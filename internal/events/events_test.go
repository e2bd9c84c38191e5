package events

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func op(id string, state storage.OperationState, stage string, finished []string, data string, created, ended int) storage.EventOperation {
	o := storage.EventOperation{RuntimeID: "rt-1", Operation: storage.Operation{ID: id, InstanceID: "i-1", Type: storage.OperationTypeProvision,
		State: state, Stage: stage, FinishedStages: finished, Data: json.RawMessage(data), CreatedAt: at(created), UpdatedAt: at(ended)}}
	if ended >= 0 && state != storage.OperationInProgress {
		end := at(ended)
		o.FinishedAt = &end
	}
	return o
}

func kinds(list []Event) string {
	var out []string
	for _, e := range list {
		out = append(out, string(e.Kind)+":"+e.Step)
	}
	return strings.Join(out, " ")
}

func TestFromOperation(t *testing.T) {
	data := `{"stepStartedAt":{"start":"2026-11-26T10:00:01Z","create_runtime":"2026-11-26T10:00:02Z","check_runtime":"2026-11-26T10:00:03Z"},
		"stepRuns":{"start":1,"create_runtime":1,"check_runtime":5},
		"history":[{"step":"check_runtime","at":"2026-11-26T10:00:03Z","kind":"wait","reason":"Pending"},
			{"step":"check_runtime","at":"2026-11-26T10:00:09Z","kind":"error","reason":"retrying: after 1 error"}]}`
	succeeded := op("p1", storage.OperationSucceeded, "", []string{"start", "create_runtime", "check_runtime"}, data, 0, 20)
	succeeded.Description = "Operation succeeded"
	got := FromOperation(succeeded)
	want := "operation_accepted: step_started:start step_done:start step_started:create_runtime step_done:create_runtime " +
		"step_started:check_runtime step_waiting:check_runtime step_error:check_runtime step_done:check_runtime operation_succeeded:"
	if kinds(got) != want {
		t.Fatalf("events\n got %s\nwant %s", kinds(got), want)
	}
	if e := got[8]; e.CreatedAt != at(20) || e.Runs != 5 || e.RuntimeID != "rt-1" {
		t.Errorf("check_runtime's end: %+v", e)
	}
	if e := got[7]; e.Level != LevelError || e.Reason != "retrying: after 1 error" || e.Message != "step check_runtime failed, retrying: retrying: after 1 error" {
		t.Errorf("error event: %+v", e)
	}
	if e := got[2]; e.CreatedAt != at(2) {
		t.Errorf("start's end is create_runtime's start: %+v", e)
	}

	failed := op("p2", storage.OperationFailed, "check_runtime", []string{"start"}, data, 0, 30)
	failed.ErrorMessage = "step check_runtime timed out"
	got = FromOperation(failed)
	if kinds(got) != "operation_accepted: step_started:start step_done:start step_started:check_runtime step_waiting:check_runtime step_error:check_runtime operation_failed:check_runtime" {
		t.Fatalf("failed operation: %s", kinds(got))
	}
	if last := got[len(got)-1]; last.Level != LevelError || last.Reason != failed.ErrorMessage || last.CreatedAt != at(30) {
		t.Errorf("failure event: %+v", last)
	}
	if got[3].Runs != 5 {
		t.Errorf("the step the operation is at shows its runs: %+v", got[3])
	}

	running := op("p3", storage.OperationInProgress, "", nil, `not json`, 0, 0)
	if got := FromOperation(running); kinds(got) != "operation_accepted:" {
		t.Errorf("an operation no worker took yet: %s", kinds(got))
	}
}

func TestFromOperationsOrdersAndCuts(t *testing.T) {
	a := op("a", storage.OperationSucceeded, "", []string{"s"}, `{"stepStartedAt":{"s":"2026-11-26T10:00:05Z"}}`, 0, 10)
	b := op("b", storage.OperationSucceeded, "", []string{"s"}, `{"stepStartedAt":{"s":"2026-11-26T10:00:07Z"}}`, 6, 8)
	got := FromOperations([]storage.EventOperation{a, b}, at(1))
	var seq []string
	for _, e := range got {
		seq = append(seq, e.OperationID+":"+string(e.Kind))
		if e.CreatedAt.Before(at(1)) {
			t.Errorf("event before the retention: %+v", e)
		}
	}
	want := "a:step_started b:operation_accepted b:step_started b:step_done b:operation_succeeded a:step_done a:operation_succeeded"
	if strings.Join(seq, " ") != want {
		t.Errorf("order\n got %s\nwant %s", strings.Join(seq, " "), want)
	}
}

// TestAVSEvaluationsInEvents: the AVS steps' done events name the
// evaluations they created and removed, so that an operator finds them in
// AVS; other steps' stay as they were.
func TestAVSEvaluationsInEvents(t *testing.T) {
	prov := `{"stepStartedAt":{"avs_internal_evaluation":"2026-11-26T10:00:01Z","create_runtime":"2026-11-26T10:00:02Z"},
		"avs":{"internal":{"id":1001,"parent":40}}}`
	got := FromOperation(op("p1", storage.OperationSucceeded, "", []string{"avs_internal_evaluation", "create_runtime"}, prov, 0, 20))
	if e := got[2]; e.Kind != StepDone || e.Message != "step avs_internal_evaluation done: AVS evaluation 1001 (parent 40)" {
		t.Errorf("avs_internal_evaluation's end: %+v", e)
	}
	reg := `{"stepStartedAt":{"edp_registration":"2026-11-26T10:00:01Z"},"edp":{"tenant":"sa-1","environment":"dev","created":true}}`
	if e := FromOperation(op("p2", storage.OperationSucceeded, "", []string{"edp_registration"}, reg, 0, 20))[2]; e.Message != "step edp_registration done: EDP data tenant sa-1 (dev)" {
		t.Errorf("edp_registration's end: %+v", e)
	}
	if e := got[4]; e.Kind != StepDone || e.Message != "step create_runtime done" || e.Reason != "" {
		t.Errorf("create_runtime's end: %+v", e)
	}
	deprov := `{"stepStartedAt":{"remove_avs_evaluations":"2026-11-26T11:00:01Z"},
		"avs":{"internal":{"id":1001,"parent":40,"deleted":true},"external":{"id":1002,"parent":40,"deleted":true}}}`
	got = FromOperation(op("d1", storage.OperationSucceeded, "", []string{"remove_avs_evaluations"}, deprov, 0, 20))
	if e := got[2]; e.Message != "step remove_avs_evaluations done: removed AVS evaluations 1001, 1002" {
		t.Errorf("remove_avs_evaluations's end: %+v", e)
	}
}
