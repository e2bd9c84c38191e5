package deprovisioning_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
)

// fakeBindings records which instances' bindings were removed.
type fakeBindings struct {
	removed []string
	err     error
}

func (f *fakeBindings) RemoveAll(_ context.Context, instanceID string) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.removed = append(f.removed, instanceID)
	return 2, nil
}

// The real removal (ServiceAccounts gone from a real runtime, rows gone) is
// proven end to end in testing/e2e (TestBindings); here the step's outcomes.
func TestRemoveBindings(t *testing.T) {
	t.Parallel()
	t.Run("removes the instance's bindings", func(t *testing.T) {
		t.Parallel()
		f := &fakeBindings{}
		op := newOp(t)
		res, err := (&deprovisioning.RemoveBindings{Bindings: f}).Run(context.Background(), op)
		processtest.MustOutcome(t, "remove_bindings", processtest.Done, res, err)
		if len(f.removed) != 1 || f.removed[0] != op.InstanceID {
			t.Errorf("removed %v, want [%s]", f.removed, op.InstanceID)
		}
	})
	t.Run("a runtime that does not answer is retried", func(t *testing.T) {
		t.Parallel()
		f := &fakeBindings{err: errors.New("connection refused")}
		res, err := (&deprovisioning.RemoveBindings{Bindings: f}).Run(context.Background(), newOp(t))
		processtest.MustOutcome(t, "remove_bindings", processtest.Temporary, res, err)
	})
	t.Run("without bindings there is nothing to do", func(t *testing.T) {
		t.Parallel()
		res, err := (&deprovisioning.RemoveBindings{}).Run(context.Background(), newOp(t))
		processtest.MustOutcome(t, "remove_bindings", processtest.Done, res, err)
	})
}
