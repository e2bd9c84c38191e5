package process

import (
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// Step outcomes an Observer is told. They are metric label values.
const (
	OutcomeDone    = "done"
	OutcomeWait    = "wait"
	OutcomeError   = "error"
	OutcomeFailed  = "failed"
	OutcomeSkipped = "skipped"
)

// Observer is told what the engine does, for metrics. Its methods must be
// quick and must not fail: they run on the worker's path.
type Observer interface {
	// StepRan reports one run of a step of an operation on an instance of
	// planID and how it ended.
	StepRan(opType storage.OperationType, planID, step, outcome string, took time.Duration)
	// StepSkipped reports a SkippableStep given up on, and what it left.
	StepSkipped(opType storage.OperationType, left Leftover)
	// OperationRunning reports an operation in progress that a worker took
	// up, with its instance.
	OperationRunning(op storage.Operation, inst storage.Instance)
	// OperationFinished reports an operation that reached succeeded or
	// failed.
	OperationFinished(f Finished)
}

// Finished is an operation that reached succeeded or failed, as an Observer
// is told of it.
type Finished struct {
	Operation storage.Operation
	Instance  storage.Instance
	// Category and Reason say who failed a failed operation and why
	// (empty when it succeeded).
	Category Category
	Reason   string
	// Leftovers are what its skipped steps left behind.
	Leftovers []Leftover
}

type noObserver struct{}

func (noObserver) StepRan(storage.OperationType, string, string, string, time.Duration) {}
func (noObserver) StepSkipped(storage.OperationType, Leftover)                          {}
func (noObserver) OperationRunning(storage.Operation, storage.Instance)                 {}
func (noObserver) OperationFinished(Finished)                                           {}
