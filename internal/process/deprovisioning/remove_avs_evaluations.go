package deprovisioning

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/process"
)

// avsRemover removes AVS evaluations (*avs.Client is one).
type avsRemover interface {
	Detach(ctx context.Context, parent, id int64) error
	DeleteEvaluation(ctx context.Context, id int64) error
}

// avsSkipAfter is how long the removal is retried before the
// deprovisioning goes on without it: upstream's one minute. A monitor left
// behind alerts on a runtime that is gone; it never keeps the cluster.
const avsSkipAfter = time.Minute

// RemoveAVSEvaluations removes the AVS evaluations the instance's
// provisioning created (Initialization copies the record), internal first:
// each is detached from its parent, deleted, and marked deleted in the
// record, so that a re-run skips it. Upstream's De-provision_AVS_Evaluations.
// It is in the pipeline whenever AVS is configured (APP_AVS_API_ENDPOINT),
// even with APP_AVS_DISABLED: evaluations created before must still go.
type RemoveAVSEvaluations struct {
	AVS avsRemover
}

// Name implements process.Step.
func (s *RemoveAVSEvaluations) Name() string { return "remove_avs_evaluations" }

// Remote implements process.RemoteStep.
func (s *RemoveAVSEvaluations) Remote() string { return "AVS" }

// SkipAfter implements process.SkippableStep.
func (s *RemoveAVSEvaluations) SkipAfter() time.Duration { return avsSkipAfter }

// Leftover implements process.SkippableStep.
func (s *RemoveAVSEvaluations) Leftover(op *process.Operation) string {
	var ids []string
	for _, kind := range []avs.Kind{avs.Internal, avs.External} {
		if c := op.Record.AVS.Of(kind); c.Live() {
			ids = append(ids, strconv.FormatInt(c.ID, 10))
		}
	}
	return "AVS evaluations " + strings.Join(ids, ", ")
}

// LeftoverRefs implements process.LeftoverReferrer: each evaluation left
// as <parent>/<id>, which the leftovers job removes (retryAVS).
func (s *RemoveAVSEvaluations) LeftoverRefs(op *process.Operation) []string {
	var refs []string
	for _, kind := range []avs.Kind{avs.Internal, avs.External} {
		if c := op.Record.AVS.Of(kind); c.Live() {
			refs = append(refs, fmt.Sprintf("%d/%d", c.Parent, c.ID))
		}
	}
	return refs
}

// retryAVS removes the evaluations a skipped removal left (LeftoverRefs);
// gone is true once none is left.
func retryAVS(ctx context.Context, c avsRemover, refs []string) (gone bool, err error) {
	if c == nil {
		return false, nil // AVS is no longer configured: they stay listed
	}
	for _, ref := range refs {
		p, i, ok := strings.Cut(ref, "/")
		parent, err1 := strconv.ParseInt(p, 10, 64)
		id, err2 := strconv.ParseInt(i, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return false, fmt.Errorf("malformed AVS leftover %q", ref)
		}
		if err := c.Detach(ctx, parent, id); err != nil {
			return false, err
		}
		if err := c.DeleteEvaluation(ctx, id); err != nil {
			return false, err
		}
	}
	return true, nil
}

// Run implements process.Step.
func (s *RemoveAVSEvaluations) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	for _, kind := range []avs.Kind{avs.Internal, avs.External} {
		c := op.Record.AVS.Of(kind)
		if !c.Live() {
			continue
		}
		op.Describe("Removing the runtime's AVS evaluation %d", c.ID)
		if err := s.AVS.Detach(ctx, c.Parent, c.ID); err != nil {
			return process.StepResult{}, fmt.Errorf("detaching AVS evaluation %d from %d: %w", c.ID, c.Parent, err)
		}
		if err := s.AVS.DeleteEvaluation(ctx, c.ID); err != nil {
			return process.StepResult{}, fmt.Errorf("deleting AVS evaluation %d: %w", c.ID, err)
		}
		c.Deleted = true
	}
	return process.Done()
}
