package deprovisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// DeleteRuntime deletes the Runtime CR and waits until the infrastructure
// manager has removed the cluster and let the CR go; then it deletes the
// runtime's overrides Secret.
type DeleteRuntime struct {
	KCP    client.Client
	Config Config
	// Runtimes forgets the runtime's cached client once the runtime is
	// gone (deprovisioned or suspended); nil forgets nothing.
	Runtimes clientForgetter
}

// clientForgetter drops a runtime's cached client.
type clientForgetter interface {
	Forget(runtimeID string)
}

// Name implements process.Step.
func (s *DeleteRuntime) Name() string { return "delete_runtime" }

// Timeout implements process.TimedStep.
func (s *DeleteRuntime) Timeout() time.Duration { return s.Config.RemovalTimeout }

// Run implements process.Step.
func (s *DeleteRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Record.RuntimeID == "" {
		return process.Done()
	}
	op.Describe("Deleting the cluster %s", op.Record.ShootName)
	rt := &infrastructuremanager.Runtime{}
	rt.Name, rt.Namespace = kyma.Name(op.Record.RuntimeID), s.Config.Namespace
	gone, err := deleteAndCheck(ctx, s.KCP, rt)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("deleting Runtime CR: %w", err)
	}
	if !gone {
		op.Describe("Waiting for the cluster %s to be deleted", op.Record.ShootName)
		return process.RetryAfter(s.Config.RemovalPoll)
	}
	// The overrides Secret is deleted by its derived name, whether or not
	// the provisioning lived to record it (a DELETE may have halted it
	// between writing the Secret and its checkpoint).
	for _, name := range overridesSecrets(op) {
		sec := &corev1.Secret{}
		sec.Name, sec.Namespace = name, s.Config.Namespace
		if _, err := deleteAndCheck(ctx, s.KCP, sec); err != nil {
			return process.StepResult{}, fmt.Errorf("deleting overrides Secret: %w", err)
		}
	}
	if s.Runtimes != nil {
		s.Runtimes.Forget(op.Record.RuntimeID)
	}
	return process.Done()
}

// overridesSecrets names the runtime's overrides Secrets: the derived name,
// and the recorded one if an older version named it differently.
func overridesSecrets(op *process.Operation) []string {
	names := []string{overrides.SecretName(op.Record.RuntimeID)}
	if rec := op.Record.OverridesSecret; rec != "" && rec != names[0] {
		names = append(names, rec)
	}
	return names
}
