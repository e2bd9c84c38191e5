package deprovisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/process"
)

// bindingRemover removes every service binding of an instance, from its
// runtime and from the database.
type bindingRemover interface {
	RemoveAll(ctx context.Context, instanceID string) (int, error)
}

// RemoveBindings removes the instance's service bindings before its runtime
// goes: their ServiceAccounts (and tokens) with the runtime would be gone
// anyway, but their rows must not outlive the instance's runtime, and a
// suspended instance keeps its row.
type RemoveBindings struct {
	Bindings bindingRemover
	Config   Config
}

// SkipAfter implements process.SkippableStep.
func (s *RemoveBindings) SkipAfter() time.Duration { return s.Config.SkipAfter }

// Leftover implements process.SkippableStep: the rows go with the archived
// instance, the ServiceAccounts with the cluster.
func (s *RemoveBindings) Leftover(*process.Operation) string {
	return "the service bindings' ServiceAccounts in the runtime"
}

// Name implements process.Step.
func (s *RemoveBindings) Name() string { return "remove_bindings" }

// Run implements process.Step.
func (s *RemoveBindings) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if s.Bindings == nil {
		return process.Done() // keb runs without bindings
	}
	op.Describe("Removing the runtime's service bindings")
	n, err := s.Bindings.RemoveAll(ctx, op.InstanceID)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("removing service bindings: %w", err)
	}
	if n > 0 {
		logging.FromContext(ctx, logrus.StandardLogger()).WithField("bindings", n).Info("service bindings removed")
	}
	return process.Done()
}
