// Package cleanup keeps the fleet honest: it deprovisions the instances of
// subaccounts deleted in CIS (SubaccountCleaner) and the runtimes that
// outlived their purpose in the control plane (EnvironmentsCleaner). Both run
// as River periodic jobs on the elected leader and as one-shot passes from
// `keb cleanup`, and both start deprovisionings through
// broker.StartDeprovisioning, the path a DELETE takes.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/storage"
)

// SubaccountJob names the subaccount cleanup's periodic job and its
// watermark: never rename it.
const SubaccountJob = "subaccount_cleanup"

// DefaultChunk is how many events' subaccounts one lookup statement covers.
const DefaultChunk = 500

// eventSource is the part of cis.Client the cleanup reads.
type eventSource interface {
	SubaccountDeletes(ctx context.Context, from time.Time, fn func(cis.Page) error) error
}

// subaccountStore is the part of storage.Store the subaccount cleanup uses.
type subaccountStore interface {
	broker.DeprovisioningStore
	Watermark(ctx context.Context, name string) (storage.Watermark, error)
	SaveWatermark(ctx context.Context, name string, w storage.Watermark) error
	InstancesOfSubaccounts(ctx context.Context, subaccountIDs []string) ([]storage.CleanupInstance, error)
}

// SubaccountCleaner deprovisions the instances of deleted subaccounts.
type SubaccountCleaner struct {
	events           eventSource
	store            subaccountStore
	operationTimeout time.Duration
	log              logrus.FieldLogger
	// Chunk is how many events one instance lookup covers.
	Chunk int
	now   func() time.Time
}

// NewSubaccountCleaner returns a cleaner reading events from src; the
// deprovisionings it starts fail after operationTimeout, as DELETE's do.
func NewSubaccountCleaner(src eventSource, store subaccountStore, operationTimeout time.Duration, log logrus.FieldLogger) *SubaccountCleaner {
	return &SubaccountCleaner{events: src, store: store, operationTimeout: operationTimeout, log: log, Chunk: DefaultChunk, now: time.Now}
}

// Outcome is what a pass did (or, in a dry run, would do) with one instance.
type Outcome string

// Outcomes of an instance of a deleted subaccount.
const (
	OutcomeTriggered Outcome = "triggered"
	OutcomeGoing     Outcome = "already deprovisioning"
	// OutcomeBusy: an update or a suspension runs; the event is kept and the
	// next pass tries again.
	OutcomeBusy Outcome = "busy"
	OutcomeGone Outcome = "gone"
)

// SubaccountAction is one instance of a deleted subaccount and what became
// of it.
type SubaccountAction struct {
	InstanceID   string
	SubaccountID string
	Outcome      Outcome
	// OperationID is the deprovisioning started or found running.
	OperationID string
}

// SubaccountReport sums up a pass.
type SubaccountReport struct {
	DryRun       bool
	Events       int // new events fetched (after the watermark)
	Subaccounts  int // distinct subaccounts among them
	Instances    int // live instances of those subaccounts
	Triggered    int
	AlreadyGoing int
	Busy         int
	Lookups      int // instance lookup statements (one per chunk)
	Actions      []SubaccountAction
	// Watermark is where the next pass starts.
	Watermark storage.Watermark
	// Stopped says why the pass ended before the newest event, if it did.
	Stopped string
}

// errStop ends the walk over pages without an error.
var errStop = errors.New("stop")

// Run makes one pass: the events after the stored watermark, page by page,
// in chunks of Chunk events; each chunk's subaccounts are looked up in one
// statement and their instances deprovisioned, then the watermark moves past
// the chunk. An instance busy with another operation keeps its event (and
// every later one) for the next pass. A dry run changes nothing, the
// watermark included.
func (c *SubaccountCleaner) Run(ctx context.Context, dryRun bool) (SubaccountReport, error) {
	wm, err := c.store.Watermark(ctx, SubaccountJob)
	if err != nil {
		return SubaccountReport{}, err
	}
	rep := SubaccountReport{DryRun: dryRun, Watermark: wm}
	seenSub := map[string]bool{}
	var pending []cis.Event
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		done, err := c.chunk(ctx, pending, dryRun, &rep, seenSub)
		if done > 0 {
			rep.Watermark = advance(rep.Watermark, pending[:done])
			if !dryRun {
				if serr := c.store.SaveWatermark(ctx, SubaccountJob, rep.Watermark); serr != nil {
					return errors.Join(err, serr)
				}
			}
		}
		if err != nil {
			return err
		}
		if done < len(pending) {
			rep.Stopped = fmt.Sprintf("event %s (subaccount %s) waits for an operation to end; the next pass resumes there",
				pending[done].ID, pending[done].SubaccountID)
			return errStop
		}
		pending = pending[:0]
		return nil
	}
	err = c.events.SubaccountDeletes(ctx, wm.ActionTime, func(p cis.Page) error {
		for _, ev := range p.Events {
			if ev.ActionTime.Before(wm.ActionTime) ||
				(ev.ActionTime.Equal(wm.ActionTime) && slices.Contains(wm.EventIDs, ev.ID)) {
				continue // handled by an earlier pass
			}
			rep.Events++
			pending = append(pending, ev)
			if len(pending) >= c.chunkSize() {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if errors.Is(err, errStop) {
		err = nil
	}
	c.summary(rep, err)
	return rep, err
}

func (c *SubaccountCleaner) chunkSize() int {
	if c.Chunk <= 0 {
		return DefaultChunk
	}
	return c.Chunk
}

// chunk handles a chunk of events and returns how many of them, from the
// first, are done: every instance of their subaccount deprovisioning or
// gone.
func (c *SubaccountCleaner) chunk(ctx context.Context, events []cis.Event, dryRun bool, rep *SubaccountReport, seenSub map[string]bool) (int, error) {
	var ids []string
	inChunk := map[string]bool{}
	for _, ev := range events {
		if !inChunk[ev.SubaccountID] {
			inChunk[ev.SubaccountID] = true
			ids = append(ids, ev.SubaccountID)
		}
		if !seenSub[ev.SubaccountID] {
			seenSub[ev.SubaccountID] = true
			rep.Subaccounts++
		}
	}
	instances, err := c.store.InstancesOfSubaccounts(ctx, ids)
	rep.Lookups++
	if err != nil {
		return 0, err
	}
	// In event order, so that on an error every event before the failing
	// subaccount's first one is done.
	bySub := map[string][]storage.CleanupInstance{}
	for _, inst := range instances {
		bySub[inst.SubAccountID] = append(bySub[inst.SubAccountID], inst)
	}
	busy := map[string]bool{} // subaccounts with an instance left for later
	for _, sa := range ids {
		for _, inst := range bySub[sa] {
			rep.Instances++
			a, err := c.deprovision(ctx, inst, dryRun)
			if err != nil {
				return doneBefore(events, sa), err
			}
			rep.Actions = append(rep.Actions, a)
			switch a.Outcome {
			case OutcomeTriggered:
				rep.Triggered++
			case OutcomeGoing:
				rep.AlreadyGoing++
			case OutcomeBusy:
				rep.Busy++
				busy[sa] = true
			}
		}
	}
	for i, ev := range events {
		if busy[ev.SubaccountID] {
			return i, nil
		}
	}
	return len(events), nil
}

// doneBefore is the number of events before the first of the subaccount.
func doneBefore(events []cis.Event, subaccountID string) int {
	for i, ev := range events {
		if ev.SubaccountID == subaccountID {
			return i
		}
	}
	return len(events)
}

// deprovision starts the instance's deprovisioning the way DELETE does, and
// logs it in the words of the reference documentation.
func (c *SubaccountCleaner) deprovision(ctx context.Context, inst storage.CleanupInstance, dryRun bool) (SubaccountAction, error) {
	a := SubaccountAction{InstanceID: inst.InstanceID, SubaccountID: inst.SubAccountID}
	log := c.log.WithFields(logrus.Fields{"instance_id": inst.InstanceID, "subaccount_id": inst.SubAccountID})
	switch {
	case inst.Deprovisioning():
		a.Outcome, a.OperationID = OutcomeGoing, inst.RunningID
		log.WithField("operation_id", a.OperationID).Info("instance of a deleted subaccount is already deprovisioning")
		return a, nil
	case dryRun && inst.Running != "" && inst.Running != storage.OperationTypeProvision:
		a.Outcome = OutcomeBusy
		return a, nil
	case dryRun:
		a.Outcome = OutcomeTriggered
		log.Infof("dry run: deprovisioning for instance %s (SubAccountID: %s) would be triggered", inst.InstanceID, inst.SubAccountID)
		return a, nil
	}
	op, created, err := broker.StartSubaccountDeprovisioning(ctx, c.store, inst.InstanceID, c.now().Add(c.operationTimeout))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		a.Outcome = OutcomeGone
		return a, nil
	case errors.Is(err, storage.ErrOperationInProgress):
		a.Outcome = OutcomeBusy
		log.WithError(err).Info("instance of a deleted subaccount is busy; the next pass tries again")
		return a, nil
	case err != nil:
		return a, fmt.Errorf("deprovisioning instance %s of subaccount %s: %w", inst.InstanceID, inst.SubAccountID, err)
	}
	a.OperationID = op.ID
	if !created {
		a.Outcome = OutcomeGoing
		log.WithField("operation_id", op.ID).Info("instance of a deleted subaccount is already deprovisioning")
		return a, nil
	}
	a.Outcome = OutcomeTriggered
	log.WithField("operation_id", op.ID).Infof("deprovisioning for instance %s (SubAccountID: %s) was triggered, operation: %s",
		inst.InstanceID, inst.SubAccountID, op.ID)
	return a, nil
}

// advance moves the watermark past the handled events (in action-time
// order): the newest time, and the IDs handled at exactly that time.
func advance(w storage.Watermark, handled []cis.Event) storage.Watermark {
	for _, ev := range handled {
		switch {
		case ev.ActionTime.After(w.ActionTime):
			w = storage.Watermark{ActionTime: ev.ActionTime, EventIDs: []string{ev.ID}}
		case ev.ActionTime.Equal(w.ActionTime) && !slices.Contains(w.EventIDs, ev.ID):
			w.EventIDs = append(slices.Clone(w.EventIDs), ev.ID)
		}
	}
	return w
}

func (c *SubaccountCleaner) summary(rep SubaccountReport, err error) {
	log := c.log.WithFields(logrus.Fields{"events": rep.Events, "subaccounts": rep.Subaccounts, "instances": rep.Instances,
		"triggered": rep.Triggered, "already_going": rep.AlreadyGoing, "busy": rep.Busy, "dry_run": rep.DryRun})
	// A dry run triggers nothing: it says what it would have done, as the
	// command's table does.
	verb, prefix := "triggered", "subaccount cleanup"
	if rep.DryRun {
		verb, prefix = "would trigger", "subaccount cleanup (dry run)"
	}
	msg := fmt.Sprintf("%s: %d events fetched, %d instances found, %d %s, %d already going, %d busy",
		prefix, rep.Events, rep.Instances, rep.Triggered, verb, rep.AlreadyGoing, rep.Busy)
	if rep.Stopped != "" {
		msg += "; stopped early: " + rep.Stopped
	}
	switch {
	case err != nil:
		log.WithError(err).Error(msg)
	case rep.Events == 0:
		log.Debug(msg) // every interval on a quiet feed: not worth a line
	default:
		log.Info(msg)
	}
}
