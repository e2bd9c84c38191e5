// Package process is keb's engine: it drives accepted operations through
// their pipelines of steps, one step at a time, checkpointing each finished
// step in the database. The queue that hands operations to workers is River,
// in PostgreSQL, so operations survive restarts and any number of replicas
// share the work.
package process

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/storage"
)

// Step is one stage of a pipeline.
type Step interface {
	// Name is persisted in every operation's checkpoints: renaming a step
	// re-runs it for operations in flight. Never rename one.
	Name() string
	// Run does the step's work. It must be idempotent: after a crash it may
	// run again although its effect already happened. Zero StepResult means
	// done; RetryAfter means "call me again later" (the worker is released,
	// nothing sleeps); Failure (see Fail) is the one way to fail the
	// operation for good. A returned error is unexpected and temporary: the
	// step is retried with backoff until the step or operation deadline.
	Run(ctx context.Context, op *Operation) (StepResult, error)
}

// TimedStep is a Step with its own deadline, counted from its first run and
// stored in the database, so that a restart does not reset it.
type TimedStep interface {
	Step
	Timeout() time.Duration
}

// SkippableStep is a Step that removes something inside or around a runtime
// (its bindings, its Kyma CR, its hyperscaler account's claim): no such step
// may keep a deprovisioning from deleting the cluster. The engine retries it
// (waits and errors alike) for SkipAfter from its first run; then, or at once
// when it fails, the step is recorded as skipped with what it left behind
// (Record.Leftovers) and the operation goes on.
type SkippableStep interface {
	Step
	// SkipAfter bounds how long the step is retried before it is skipped.
	SkipAfter() time.Duration
	// Leftover says what a skip of the step leaves behind, in an operator's
	// words (it is shown in last_operation and /info/runtimes).
	Leftover(op *Operation) string
}

// Leftover is what a skipped step left behind.
type Leftover struct {
	Step     string   `json:"step"`
	Category Category `json:"category"`
	// Reason is a short code (ReasonTimeout, ...); What says what is left,
	// Cause why the step gave up.
	Reason    string    `json:"reason"`
	What      string    `json:"what"`
	Cause     string    `json:"cause"`
	SkippedAt time.Time `json:"skippedAt"`
	// Refs name what is left for the job that retries leftovers, where the
	// archive does not (an external service's object IDs); see
	// LeftoverReferrer.
	Refs []string `json:"refs,omitempty"`
}

// LeftoverReferrer is a SkippableStep whose leftovers live outside the
// control plane: Refs names them for the leftovers job.
type LeftoverReferrer interface {
	SkippableStep
	LeftoverRefs(op *Operation) []string
}

// SharedCheckpoint is a Step whose checkpoint, once it is done, is written by
// the next save of the same run (the next step's checkpoint, a wait, the
// operation's end, or the run yielding its worker) instead of by an UPDATE of
// its own: steps that finish at once cost one write between them. A crash
// before that save runs the step again, possibly after later steps of the
// run acted on what it did the first time; a step opts in only when that is
// harmless, because a re-run arrives at the same result (a name derived from
// the runtime ID, a list computed from the record) or because nothing outside
// keb acts on its result before it is saved. A step that makes a choice a
// re-run could make differently, which a later step then hands to someone
// else (a claimed hyperscaler account written into the Runtime CR), must not
// share it for such a run. A halt (a DELETE) is noticed at the next save, too:
// the steps in between run although the operation was halted, as a step in
// flight does; the deprovisioning that follows cleans up what they made.
type SharedCheckpoint interface {
	Step
	// SharesCheckpoint reports whether this done run of the step may wait
	// for the next save.
	SharesCheckpoint(op *Operation) bool
}

// sharesCheckpoint reports whether a done step's checkpoint may wait for
// the next save (SharedCheckpoint).
func sharesCheckpoint(step Step, op *Operation) bool {
	s, ok := step.(SharedCheckpoint)
	return ok && s.SharesCheckpoint(op)
}

// RemoteStep is a Step whose calls go somewhere other than the control plane
// (a runtime's API server): last_operation names that place while the step
// cannot reach it.
type RemoteStep interface {
	Step
	Remote() string
}

// StepResult says what happens after a step ran.
type StepResult struct {
	RetryAfter time.Duration
	Failure    error
}

// Done is the result of a finished step.
func Done() (StepResult, error) { return StepResult{}, nil }

// RetryAfter asks to run the step again after d.
func RetryAfter(d time.Duration) (StepResult, error) { return StepResult{RetryAfter: d}, nil }

// Fail ends the operation as failed; msg is shown to the platform user.
func Fail(format string, args ...any) (StepResult, error) {
	return StepResult{Failure: fmt.Errorf(format, args...)}, nil
}

// Operation is what a step sees: the stored operation, its instance, and
// the typed record that steps hand to later steps. The record is the stored
// operation's Data (JSON), decoded before the steps run and encoded at every
// save; it has a name of its own so that it never hides that field.
//
// Steps of every pipeline read the runtime's identity (RuntimeID, ShootName,
// ClusterID) from Instance, never from Record: the instance row is the one
// place it is decided (Store.SetRuntimeIdentity writes it once, before
// anything exists in the control plane, and a resume clears it for a new
// runtime), it is loaded afresh for every run, and an update or a
// deprovisioning has no provisioning record of its own to read it from. The
// record's copies are history for operators reading an operation.
type Operation struct {
	storage.Operation
	Instance storage.Instance
	Record   Record
	// now is the engine's clock, so that deadlines are testable.
	now func() time.Time
}

// Now is the engine's current time (the wall clock for an operation built
// outside the engine).
func (o *Operation) Now() time.Time {
	if o.now == nil {
		return time.Now()
	}
	return o.now()
}

// Describe sets the description the platform sees in last_operation: what
// the operation is doing or waiting for, in a platform user's words.
func (o *Operation) Describe(format string, args ...any) {
	o.Description = fmt.Sprintf(format, args...)
}

// Conclude sets what a succeeded operation says instead of its pipeline's
// Done text, when a step's outcome makes that text untrue (nothing to push, a
// Secret left alone, an instance suspended rather than deleted). It is
// persisted, so a later run that finishes the operation still says it.
func (o *Operation) Conclude(format string, args ...any) {
	o.Record.Conclusion = fmt.Sprintf(format, args...)
}

// Record is what steps record for later steps and for operators. It is stored
// as the operation's data (JSON); it never holds secrets.
type Record struct {
	// RuntimeID, ShootName and ClusterID copy the instance's identity for
	// operators; steps read op.Instance (see Operation). An update sets
	// ClusterID only once it decided to inject BTP Manager's Secret afresh.
	RuntimeID      string `json:"runtimeID,omitempty"`
	ShootName      string `json:"shootName,omitempty"`
	ClusterID      string `json:"clusterID,omitempty"`
	KymaVersion    string `json:"kymaVersion,omitempty"`
	Provider       string `json:"provider,omitempty"`
	Region         string `json:"region,omitempty"`
	ProviderRegion string `json:"providerRegion,omitempty"`
	MachineType    string `json:"machineType,omitempty"`
	AutoScalerMin  int    `json:"autoScalerMin,omitempty"`
	AutoScalerMax  int    `json:"autoScalerMax,omitempty"`
	ZonesCount     int    `json:"zonesCount,omitempty"`
	// Zones are the Kyma worker pool's availability zones once
	// create_runtime chose them (an update: as its Runtime CR has them).
	Zones             []string `json:"zones,omitempty"`
	HyperscalerType   string   `json:"hyperscalerType,omitempty"`
	HyperscalerSecret string   `json:"hyperscalerSecret,omitempty"`
	HyperscalerShared bool     `json:"hyperscalerShared,omitempty"`
	// HyperscalerEUAccess: the account is an EU-access one (euAccess=true).
	HyperscalerEUAccess bool     `json:"hyperscalerEUAccess,omitempty"`
	OverridesSecret     string   `json:"overridesSecret,omitempty"`
	Components          []string `json:"components,omitempty"`
	// RuntimeWrite is the change an update or upgrade wrote into the
	// Runtime CR, which its wait step waits to see applied; nil when the
	// operation changed nothing there.
	RuntimeWrite *infrastructuremanager.Write `json:"runtimeWrite,omitempty"`
	// StepStartedAt holds each step's first run, for step deadlines.
	StepStartedAt map[string]time.Time `json:"stepStartedAt,omitempty"`
	// StepRuns counts each step's runs (waits and retries included), for
	// the operations console.
	StepRuns map[string]int `json:"stepRuns,omitempty"`
	// History is what a step went through besides its start: each wait with
	// a new reason and the first of each run of errors (GET /events). It is
	// saved with the wait it records, never on its own.
	History []HistoryEntry `json:"history,omitempty"`
	// Conclusion replaces the pipeline's Done text; see Operation.Conclude.
	Conclusion string `json:"conclusion,omitempty"`
	// Failures counts consecutive unexpected errors of the current step, for
	// backoff without burning the queue's attempts.
	Failures int `json:"failures,omitempty"`
	// FailingSince is when the current run of errors began, which
	// last_operation tells the platform user.
	FailingSince *time.Time `json:"failingSince,omitempty"`
	// Upgrade is what an orchestration's upgrade applies; nil for other
	// operations.
	Upgrade *Upgrade `json:"upgrade,omitempty"`
	// SubaccountDeleted marks a deprovisioning the subaccount cleanup
	// started: it soft-deletes the runtime's BTP service instances and
	// bindings (upstream's accountcleanup-job deprovisioning).
	SubaccountDeleted bool `json:"subaccountDeleted,omitempty"`
	// Leftovers are the skipped steps' remains (SkippableStep).
	Leftovers []Leftover `json:"leftovers,omitempty"`
	// AVS are the AVS evaluations a provisioning created (and its
	// deprovisioning removed); nil without the AVS integration.
	AVS *avs.Record `json:"avs,omitempty"`
	// AVSMaintenance is what a cluster upgrade did to the runtime's AVS
	// evaluations; nil when it did nothing.
	AVSMaintenance *avs.Maintenance `json:"avsMaintenance,omitempty"`
	// EDP is the subaccount's EDP registration a provisioning did; nil
	// without the EDP integration.
	EDP *edp.Record `json:"edp,omitempty"`
	// IAS is the runtime's IAS service provider a provisioning registered;
	// nil without the IAS integration.
	IAS *ias.Record `json:"ias,omitempty"`
	// LMS is the runtime's LMS tenant and certificates a provisioning set
	// up; nil without the LMS integration (or for a runtime without LMS).
	LMS *lms.Record `json:"lms,omitempty"`
	// ErrorCategory and ErrorReason say, for a failed operation, which
	// component failed it and why, as a short code.
	ErrorCategory Category `json:"errorCategory,omitempty"`
	ErrorReason   string   `json:"errorReason,omitempty"`
}

// Upgrade is the target of an upgrade operation, written by the
// orchestration that starts it, and what its steps found.
type Upgrade struct {
	OrchestrationID string `json:"orchestrationID"`
	DryRun          bool   `json:"dryRun,omitempty"`
	// Kyma upgrades: the Kyma version and the Kyma CR's spec.channel ("" keeps it).
	KymaVersion string `json:"kymaVersion,omitempty"`
	KymaChannel string `json:"kymaChannel,omitempty"`
	// Cluster upgrades ("" keeps the current value).
	KubernetesVersion   string `json:"kubernetesVersion,omitempty"`
	MachineImage        string `json:"machineImage,omitempty"`
	MachineImageVersion string `json:"machineImageVersion,omitempty"`
	// Previous values, for the description and the operation's details.
	PreviousKymaVersion       string `json:"previousKymaVersion,omitempty"`
	PreviousKymaChannel       string `json:"previousKymaChannel,omitempty"`
	PreviousKubernetesVersion string `json:"previousKubernetesVersion,omitempty"`
	PreviousMachineImage      string `json:"previousMachineImage,omitempty"`
}

// SetResolved records what the plan's defaults and the request's parameters
// resolved to: the runtime's provider, regions, machine type, autoscaler and
// zones. The broker calls it when it accepts a provisioning, so that the
// runtime is built with what the instance was accepted with, even when
// plans.yaml changes before a worker starts the operation.
func (r *Record) SetResolved(res catalog.Resolved) {
	r.Provider, r.Region, r.ProviderRegion = res.Provider, res.Region, res.ProviderRegion
	r.MachineType, r.AutoScalerMin, r.AutoScalerMax, r.ZonesCount = res.MachineType, res.AutoScalerMin, res.AutoScalerMax, res.ZonesCount
}

// Resolved reports whether the record holds resolved plan defaults
// (SetResolved).
func (r *Record) Resolved() bool { return r.Provider != "" }

func decodeRecord(raw json.RawMessage) (Record, error) {
	var d Record
	if len(raw) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, fmt.Errorf("decoding operation data: %w", err)
	}
	return d, nil
}
