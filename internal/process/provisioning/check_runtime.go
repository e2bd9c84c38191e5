package provisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
)

// CheckRuntime waits until the infrastructure manager reports the cluster
// Ready and its kubeconfig Secret exists. Waiting releases the worker; a
// watch on the Runtime CR and the Secret wakes the operation early. Failed
// is waited through (the infrastructure manager retries Gardener's errors),
// showing the newest condition, until the step's timeout fails the
// operation with it.
type CheckRuntime struct {
	KCP client.Reader
	// Watch, when set, is what that watch has seen: the run a wake-up
	// starts finds the Ready Runtime CR and the Secret there, without two
	// of an azure provisioning's API server requests (process.GetAwaited).
	Watch  process.SeenReader
	Config Config
}

// Name implements process.Step.
func (s *CheckRuntime) Name() string { return "check_runtime" }

// SharesCheckpoint implements process.SharedCheckpoint: it only reads.
func (s *CheckRuntime) SharesCheckpoint(*process.Operation) bool { return true }

// Timeout implements process.TimedStep.
func (s *CheckRuntime) Timeout() time.Duration { return s.Config.RuntimeTimeout }

// Run implements process.Step.
func (s *CheckRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	wait := RuntimeWait{KCP: s.KCP, Watch: s.Watch, Namespace: s.Config.Namespace, Poll: s.Config.RuntimePoll}
	rt, ready, next, err := wait.Await(ctx, op, nil)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the cluster was ready", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	if !ready {
		op.Describe("Waiting for the cluster %s to be created (infrastructure state: %s)", op.Instance.ShootName, im.Explain(rt.Status))
		return process.RetryAfter(next)
	}
	// Only whether the Secret exists matters here: its metadata is read,
	// never the kubeconfig.
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	key := client.ObjectKey{Namespace: s.Config.Namespace, Name: im.KubeconfigSecretName(op.Instance.RuntimeID)}
	err = process.GetAwaited(ctx, s.Watch, s.KCP, key, secret, func() bool { return true })
	if apierrors.IsNotFound(err) {
		op.Describe("Waiting for the kubeconfig of cluster %s", op.Instance.ShootName)
		return process.RetryAfter(s.Config.RuntimePoll)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading kubeconfig Secret: %w", err)
	}
	return process.Done()
}
