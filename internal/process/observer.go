package process

import (
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// Step outcomes an Observer is told. They are metric label values.
const (
	OutcomeDone   = "done"
	OutcomeWait   = "wait"
	OutcomeError  = "error"
	OutcomeFailed = "failed"
)

// Observer is told what the engine does, for metrics. Its methods must be
// quick and must not fail: they run on the worker's path.
type Observer interface {
	// StepRan reports one run of a step and how it ended.
	StepRan(opType storage.OperationType, step, outcome string, took time.Duration)
	// OperationFinished reports an operation that reached succeeded or
	// failed, with its instance's plan.
	OperationFinished(op storage.Operation, planID string)
}

type noObserver struct{}

func (noObserver) StepRan(storage.OperationType, string, string, time.Duration) {}
func (noObserver) OperationFinished(storage.Operation, string)                  {}
