package infrasim

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// Finalizer holds a Runtime CR until the simulator has stopped its cluster and
// deleted its kubeconfig Secret.
const Finalizer = "infrasim.keb.kyma-project.io/cleanup"

const (
	// pendingSinceAnnotation records, to the nanosecond, when the simulator
	// first saw the Runtime: creationTimestamp has whole seconds only, and the
	// delay must survive a simulator restart.
	pendingSinceAnnotation = "infrasim.keb.kyma-project.io/pending-since"
	// applyingSinceAnnotation records when the simulator began applying a
	// changed spec (an upgrade) to a Ready runtime: the change takes the
	// same delay as a creation, counted from then.
	applyingSinceAnnotation = "infrasim.keb.kyma-project.io/applying-since"
	// fieldOwner owns the kubeconfig Secret's fields (server-side apply).
	fieldOwner = "keb-infrasim"
	// labelManagedBy marks the kubeconfig Secrets the simulator writes.
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "keb-infrasim"
)

// clusterProvider gives runtimes their clusters.
type clusterProvider interface {
	// Ensure returns the kubeconfig of the runtime's cluster, starting one unless the runtime has one.
	Ensure(ctx context.Context, runtimeID string) ([]byte, error)
	// Owns reports whether this process started the runtime's (still running) cluster.
	Owns(runtimeID string) bool
	// Release tears the runtime's cluster down; a no-op without one.
	Release(runtimeID string) error
}

// reconciler plays the infrastructure manager for one Runtime CR.
type reconciler struct {
	client       client.Client
	clusters     clusterProvider
	delay        time.Duration
	failRuntimes func(runtimeID string) string
	failChanges  func(rt *infrastructuremanager.Runtime) string
	log          logrus.FieldLogger
	now          func() time.Time
}

var _ reconcile.Reconciler = (*reconciler)(nil)

// staleRetry is how soon a reconcile that read a stale Runtime runs again.
const staleRetry = 200 * time.Millisecond

// Reconcile moves a Runtime through Pending → Ready (or Failed), and on
// deletion through Terminating to gone. Every write is idempotent, so a
// reconcile interrupted at any point is finished by the next one.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// Writes to the Runtime carry the resourceVersion read from the cache,
		// which may predate our own last write; acting on it could, say, put a
		// Ready runtime back to Pending. Read again shortly: not worth an error log.
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	return res, err
}

func (r *reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rt := &infrastructuremanager.Runtime{}
	if err := r.client.Get(ctx, req.NamespacedName, rt); err != nil {
		// Gone means our finalizer was removed, so teardown already ran (or was
		// bypassed; Start stops leftover clusters on shutdown).
		if err := client.IgnoreNotFound(err); err != nil {
			return reconcile.Result{}, fmt.Errorf("reading Runtime %s: %w", req.NamespacedName, err)
		}
		return reconcile.Result{}, nil
	}
	id := rt.RuntimeID()
	log := r.log.WithFields(logrus.Fields{"runtime_id": id, "runtime_cr": req.NamespacedName.String()})

	if !rt.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.tearDown(ctx, rt, id, log)
	}
	if err := r.ensureFinalizer(ctx, rt); err != nil {
		return reconcile.Result{}, err
	}

	if changed(rt) && (rt.Status.State == infrastructuremanager.StateReady || rt.Status.State == infrastructuremanager.StateFailed) {
		// A changed spec (Kubernetes version, machine image, Kyma version):
		// the real infrastructure manager rolls it out, reporting Pending,
		// then Ready with the new observedGeneration.
		return reconcile.Result{RequeueAfter: r.delay}, r.beginApplying(ctx, rt, log)
	}
	switch rt.Status.State {
	case infrastructuremanager.StateFailed:
		if rt.Annotations[applyingSinceAnnotation] == "" {
			return reconcile.Result{}, nil // terminal, as upstream: keb deletes the Runtime and asks again
		}
		// A change that failed to roll out is tried again, as the real
		// infrastructure manager's periodic reconciliation does; below.
	case infrastructuremanager.StateReady:
		if rt.Status.ObservedGeneration == 0 {
			// Made Ready by a simulator that did not report generations:
			// what it made Ready is the current spec.
			if err := r.setStatus(ctx, rt, infrastructuremanager.StateReady, rt.Status.Message); err != nil {
				return reconcile.Result{}, err
			}
		}
		if r.clusters.Owns(id) {
			return reconcile.Result{}, nil
		}
		// The kubeconfig points at a cluster a previous process started and
		// took down with it; a fresh cluster and a rewritten kubeconfig are the
		// closest to "the runtime survived" a simulator can offer.
		log.Info("Runtime is Ready but this process has no cluster for it (simulator restarted): starting a fresh one")
		return reconcile.Result{}, r.provision(ctx, rt, id, log)
	}

	wait := r.pendingSince(rt).Add(r.delay).Sub(r.now())
	if rt.Status.State == "" && wait > 0 {
		// Reported only when there is a delay to be Pending for: with none,
		// the runtime becomes Ready (or Failed) in this very reconcile, and a
		// Pending nobody could see would cost the API server a status write
		// and every watcher an event, on each of a bench's thousand runtimes.
		if err := r.setStatus(ctx, rt, infrastructuremanager.StatePending, "simulated infrastructure manager is creating the cluster"); err != nil {
			return reconcile.Result{}, err
		}
		log.WithField("delay", r.delay.String()).Info("Runtime pending")
	}
	// Requeue rather than sleep: waiting must not hold a worker.
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if r.failChanges != nil && rt.Annotations[applyingSinceAnnotation] != "" {
		if msg := r.failChanges(rt); msg != "" {
			if rt.Status.State != infrastructuremanager.StateFailed {
				if err := r.setStatus(ctx, rt, infrastructuremanager.StateFailed, msg); err != nil {
					return reconcile.Result{}, err
				}
				log.WithField("message", msg).Info("applying the changed spec failed, as configured")
			}
			return reconcile.Result{RequeueAfter: max(r.delay, time.Second)}, nil
		}
	}
	if r.failRuntimes != nil {
		if msg := r.failRuntimes(id); msg != "" {
			if err := r.setStatus(ctx, rt, infrastructuremanager.StateFailed, msg); err != nil {
				return reconcile.Result{}, err
			}
			log.WithField("message", msg).Info("Runtime failed, as configured")
			return reconcile.Result{}, nil
		}
	}
	return reconcile.Result{}, r.provision(ctx, rt, id, log)
}

// provision gives the runtime a cluster, publishes its kubeconfig and marks it Ready.
func (r *reconciler) provision(ctx context.Context, rt *infrastructuremanager.Runtime, id string, log logrus.FieldLogger) error {
	kubeconfig, err := r.clusters.Ensure(ctx, id)
	if err != nil {
		return fmt.Errorf("giving runtime %s a cluster: %w", id, err)
	}
	// The Secret first: whoever sees Ready must find the kubeconfig.
	if err := r.applyKubeconfig(ctx, rt.Namespace, id, kubeconfig); err != nil {
		return err
	}
	if rt.Status.State != infrastructuremanager.StateReady || rt.Status.ObservedGeneration != rt.Generation {
		if err := r.setStatus(ctx, rt, infrastructuremanager.StateReady, "simulated cluster is ready"); err != nil {
			return err
		}
	}
	log.Info("Runtime ready, kubeconfig written")
	return nil
}

// tearDown stops the cluster, deletes the kubeconfig and lets the CR go.
func (r *reconciler) tearDown(ctx context.Context, rt *infrastructuremanager.Runtime, id string, log logrus.FieldLogger) error {
	if !controllerutil.ContainsFinalizer(rt, Finalizer) {
		return nil
	}
	if rt.Status.State != infrastructuremanager.StateTerminating {
		if err := r.setStatus(ctx, rt, infrastructuremanager.StateTerminating, "simulated infrastructure manager is deleting the cluster"); err != nil {
			return err
		}
	}
	if err := r.clusters.Release(id); err != nil {
		return fmt.Errorf("tearing down runtime %s: %w", id, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rt.Namespace, Name: infrastructuremanager.KubeconfigSecretName(id)}}
	if err := client.IgnoreNotFound(r.client.Delete(ctx, secret)); err != nil {
		return fmt.Errorf("deleting kubeconfig secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	base := rt.DeepCopy()
	controllerutil.RemoveFinalizer(rt, Finalizer)
	// Optimistic lock: a merge patch replaces the whole finalizer list, which
	// must not drop a finalizer someone added meanwhile.
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := client.IgnoreNotFound(r.client.Patch(ctx, rt, patch)); err != nil {
		return fmt.Errorf("removing finalizer from Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	log.Info("Runtime deleted: cluster gone, kubeconfig removed")
	return nil
}

// ensureFinalizer adds the finalizer and the pending-since stamp in one write.
func (r *reconciler) ensureFinalizer(ctx context.Context, rt *infrastructuremanager.Runtime) error {
	if controllerutil.ContainsFinalizer(rt, Finalizer) {
		return nil
	}
	base := rt.DeepCopy()
	controllerutil.AddFinalizer(rt, Finalizer)
	if _, ok := rt.Annotations[pendingSinceAnnotation]; !ok {
		if rt.Annotations == nil {
			rt.Annotations = map[string]string{}
		}
		rt.Annotations[pendingSinceAnnotation] = r.now().UTC().Format(time.RFC3339Nano)
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Patch(ctx, rt, patch); err != nil {
		return fmt.Errorf("adding finalizer to Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	return nil
}

// pendingSince is when the delay started: the start of applying a changed
// spec, else the simulator's first stamp, else the CR's creation.
func (r *reconciler) pendingSince(rt *infrastructuremanager.Runtime) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, rt.Annotations[applyingSinceAnnotation]); err == nil {
		return t
	}
	if t, err := time.Parse(time.RFC3339Nano, rt.Annotations[pendingSinceAnnotation]); err == nil {
		return t
	}
	return rt.CreationTimestamp.Time
}

// changed reports a spec changed after the simulator last reported on it.
func changed(rt *infrastructuremanager.Runtime) bool {
	return rt.Status.ObservedGeneration != 0 && rt.Status.ObservedGeneration < rt.Generation
}

// beginApplying stamps when applying a changed spec began and reports the
// runtime Pending; the Pending path makes it Ready after the delay.
func (r *reconciler) beginApplying(ctx context.Context, rt *infrastructuremanager.Runtime, log logrus.FieldLogger) error {
	base := rt.DeepCopy()
	if rt.Annotations == nil {
		rt.Annotations = map[string]string{}
	}
	rt.Annotations[applyingSinceAnnotation] = r.now().UTC().Format(time.RFC3339Nano)
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Patch(ctx, rt, patch); err != nil {
		return fmt.Errorf("stamping Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	msg := fmt.Sprintf("simulated infrastructure manager is applying generation %d (Kubernetes %q, Kyma %q)",
		rt.Generation, rt.Spec.Shoot.Kubernetes.Version, rt.Spec.Kyma.Version)
	if err := r.setStatus(ctx, rt, infrastructuremanager.StatePending, msg); err != nil {
		return err
	}
	log.WithField("generation", rt.Generation).Info("Runtime spec changed: applying it")
	return nil
}

// setStatus writes the state. Ready and Failed report on the current spec
// (observedGeneration = generation); Pending and Terminating keep the
// generation last reported on.
func (r *reconciler) setStatus(ctx context.Context, rt *infrastructuremanager.Runtime, state infrastructuremanager.State, message string) error {
	base := rt.DeepCopy()
	observed := rt.Status.ObservedGeneration
	if state == infrastructuremanager.StateReady || state == infrastructuremanager.StateFailed {
		observed = rt.Generation
	}
	rt.Status = infrastructuremanager.RuntimeStatus{State: state, Message: message, ObservedGeneration: observed}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, rt, patch); err != nil {
		return fmt.Errorf("setting Runtime %s/%s to %s: %w", rt.Namespace, rt.Name, state, err)
	}
	return nil
}

// applyKubeconfig writes the kubeconfig Secret with server-side apply, so a
// repeat (or a rewrite after a restart) needs no read.
func (r *reconciler) applyKubeconfig(ctx context.Context, namespace, runtimeID string, kubeconfig []byte) error {
	name := infrastructuremanager.KubeconfigSecretName(runtimeID)
	secret := corev1ac.Secret(name, namespace).
		// The runtime-id label is how keb's watch maps this Secret to the
		// operation waiting for it, as with the real infrastructure manager.
		WithLabels(map[string]string{labelManagedBy: managedBy, controlplane.LabelRuntimeID: runtimeID}).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{infrastructuremanager.KubeconfigKey: kubeconfig})
	if err := r.client.Apply(ctx, secret, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing kubeconfig secret %s/%s: %w", namespace, name, err)
	}
	return nil
}
