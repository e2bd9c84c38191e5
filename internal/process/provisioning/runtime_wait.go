package provisioning

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// RuntimeWait is how the steps that wait on the infrastructure manager read
// a Runtime CR: check_runtime for a new cluster, check_runtime_update and
// await_upgrade for a change keb wrote (docs/architecture.md, "Waiting for
// the infrastructure manager").
type RuntimeWait struct {
	KCP client.Reader
	// Watch, when set, is what the control-plane watch has seen: the run a
	// wake-up starts finds the awaited Runtime CR there (process.GetAwaited).
	Watch     process.SeenReader
	Namespace string
	// Poll is how often a wait looks while nothing wakes it; Grace is how
	// long a written change may leave no trace in a Ready status before it
	// counts as applied (im.Write.Applied).
	Poll, Grace time.Duration
}

// Await reads the runtime's Runtime CR and reports whether it is Ready with
// write applied (write nil: Ready at all). When it is not, next is when to
// look again: the poll interval, or the end of the grace sooner. A missing CR
// is an error for which apierrors.IsNotFound holds. Failed is not final here:
// the infrastructure manager retries Gardener's errors, so the caller keeps
// waiting (showing im.Explain) until its step's timeout.
func (w RuntimeWait) Await(ctx context.Context, op *process.Operation, write *im.Write) (rt *im.Runtime, applied bool, next time.Duration, err error) {
	rt = &im.Runtime{}
	key := client.ObjectKey{Namespace: w.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}
	now := op.Now()
	check := func() (bool, time.Duration) {
		if write == nil {
			return rt.Status.State == im.StateReady, 0
		}
		return write.Applied(rt, now, w.Grace)
	}
	err = process.GetAwaited(ctx, w.Watch, w.KCP, key, rt, func() bool {
		if write == nil {
			return rt.Status.State == im.StateReady
		}
		// A copy: what the watch shows must not mark the write as having
		// left Ready; only the state read below counts.
		probe := *write
		ok, _ := probe.Applied(rt, now, w.Grace)
		return ok
	})
	if err != nil {
		return nil, false, 0, err
	}
	applied, left := check()
	if applied {
		return rt, true, 0, nil
	}
	next = w.Poll
	if left > 0 && left < next {
		next = left
	}
	return rt, false, next, nil
}
