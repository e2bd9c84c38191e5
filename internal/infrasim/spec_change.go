package infrasim

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// applySpecChange reacts to a Ready Runtime whose spec changed since it was
// reached (status.observedGeneration behind metadata.generation), as the real
// infrastructure manager does when it reconciles the shoot: the Runtime goes
// back to Pending for the configured delay and then to Ready with the new
// generation (or Failed, when FailRuntimes says so). The delay restarts from
// now, so the change takes as long to apply as a creation.
func (r *reconciler) applySpecChange(ctx context.Context, rt *infrastructuremanager.Runtime, log logrus.FieldLogger) (reconcile.Result, error) {
	base := rt.DeepCopy()
	if rt.Annotations == nil {
		rt.Annotations = map[string]string{}
	}
	rt.Annotations[pendingSinceAnnotation] = r.now().UTC().Format(time.RFC3339Nano)
	if err := r.client.Patch(ctx, rt, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, fmt.Errorf("stamping Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	msg := fmt.Sprintf("simulated infrastructure manager is applying the changed spec (generation %d)", rt.Generation)
	if err := r.setStatus(ctx, rt, infrastructuremanager.StatePending, msg); err != nil {
		return reconcile.Result{}, err
	}
	log.WithFields(logrus.Fields{"generation": rt.Generation, "delay": r.delay.String()}).Info("Runtime spec changed: applying it")
	return reconcile.Result{RequeueAfter: r.delay}, nil
}
