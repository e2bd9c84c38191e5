package infrasim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// fieldOwner owns the kubeconfig Secret's fields (server-side apply).
const fieldOwner = "keb-infrasim"

// requiredLabels are the labels without which the infrastructure manager
// refuses to work on a Runtime.
var requiredLabels = []string{controlplane.LabelInstanceID, controlplane.LabelRuntimeID, controlplane.LabelRegion,
	controlplane.LabelKymaName, controlplane.LabelPlanID, controlplane.LabelPlanName, controlplane.LabelGlobalAccountID,
	controlplane.LabelSubAccountID}

// clusterProvider gives runtimes their clusters.
type clusterProvider interface {
	// Ensure returns the kubeconfig of the runtime's cluster, starting one unless the runtime has one.
	Ensure(ctx context.Context, runtimeID string) ([]byte, error)
	// Owns reports whether this process started the runtime's (still running) cluster.
	Owns(runtimeID string) bool
	// Release tears the runtime's cluster down; a no-op without one.
	Release(runtimeID string) error
}

// progress is what the simulator remembers of a Runtime between reconciles.
// The real infrastructure manager writes nothing of it into the Runtime (no
// annotation, no observedGeneration), so neither does the simulator: it
// keeps it in memory. After a restart a Ready Runtime counts as applied at
// its current generation, and a pending one starts its delay again.
type progress struct {
	// since is when the current creation or change began.
	since time.Time
	// applied is the generation last made Ready; 0 before the first time.
	applied int64
	// applying is the generation being rolled out (0: none).
	applying int64
	// faulted is the generation a transient fault was injected for, and
	// faultEnds when it ends.
	faulted   int64
	faultEnds time.Time
}

// reconciler plays the infrastructure manager for Runtime CRs.
type reconciler struct {
	client client.Client
	// reader reads the Gardener project uncached (the cache holds Runtimes only); gardener is nil
	// without a project (no binding check, no Shoots).
	reader   client.Reader
	gardener *Gardener
	clusters clusterProvider
	delay    time.Duration
	faults   func(rt *im.Runtime) *Fault
	log      logrus.FieldLogger
	now      func() time.Time

	mu    sync.Mutex
	state map[types.UID]*progress
}

var _ reconcile.Reconciler = (*reconciler)(nil)

// staleRetry is how soon a reconcile that read a stale Runtime runs again.
const staleRetry = 200 * time.Millisecond

// Reconcile moves a Runtime through Pending → Ready (or Failed), a changed
// spec through Pending → Ready again, and a deletion through Terminating to
// gone. Every write is idempotent, so a reconcile interrupted at any point is
// finished by the next one.
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
	rt := &im.Runtime{}
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
	p := r.progress(rt)
	if msg := refusal(rt); msg != "" {
		// As the infrastructure manager: it does not work on such a Runtime.
		// A corrected Runtime is reconciled again.
		if failedWith(rt, im.ReasonConfigurationError, msg) {
			return reconcile.Result{}, nil
		}
		log.WithField("message", msg).Info("Runtime refused")
		return reconcile.Result{}, r.setStatus(ctx, rt, im.StateFailed, im.ConditionProvisioned, metav1.ConditionFalse,
			im.ReasonConfigurationError, msg)
	}
	if msg, err := r.bindingMissing(ctx, rt, p); err != nil || msg != "" {
		// Gardener refuses the Shoot: the infrastructure manager reports it and tries again later
		// (the binding may be created, or the Runtime corrected).
		if err != nil || failedWith(rt, im.ReasonGardenerError, msg) {
			return reconcile.Result{RequeueAfter: max(r.delay, time.Second)}, err
		}
		log.WithField("message", msg).Info("Runtime failed: no such binding")
		return reconcile.Result{RequeueAfter: max(r.delay, time.Second)}, r.setStatus(ctx, rt, im.StateFailed, im.ConditionProvisioned,
			metav1.ConditionFalse, im.ReasonGardenerError, msg)
	}
	if p.applied == rt.Generation && rt.Status.State == im.StateReady {
		if r.clusters.Owns(id) {
			return reconcile.Result{}, nil
		}
		// The kubeconfig points at a cluster a previous process started and
		// took down with it; a fresh cluster and a rewritten kubeconfig are the
		// closest to "the runtime survived" a simulator can offer.
		log.Info("Runtime is Ready but this process has no cluster for it (simulator restarted): starting a fresh one")
		return reconcile.Result{}, r.provision(ctx, rt, p, id, log)
	}

	if p.applying != rt.Generation {
		// A new spec to roll out: the creation's first sight, or a change
		// (the infrastructure manager reconciles on every new generation).
		r.begin(p, rt.Generation)
		if p.applied != 0 {
			log.WithField("generation", rt.Generation).Info("Runtime spec changed: applying it")
			if err := r.setStatus(ctx, rt, im.StatePending, im.ConditionProvisioned, metav1.ConditionUnknown,
				im.ReasonProcessing, "Shoot update is in progress"); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	wait := p.since.Add(r.delay).Sub(r.now())
	if rt.Status.State == "" && wait > 0 {
		// Reported only when there is a delay to be Pending for: with none,
		// the runtime becomes Ready (or Failed) in this very reconcile, and a
		// Pending nobody could see would cost the API server a status write
		// and every watcher an event, on each of a bench's thousand runtimes.
		if err := r.setStatus(ctx, rt, im.StatePending, im.ConditionProvisioned, metav1.ConditionUnknown,
			im.ReasonProcessing, "Shoot is pending"); err != nil {
			return reconcile.Result{}, err
		}
		log.WithField("delay", r.delay.String()).Info("Runtime pending")
	}
	// Requeue rather than sleep: waiting must not hold a worker.
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if res, stop, err := r.fault(ctx, rt, p, log); stop || err != nil {
		return res, err
	}
	return reconcile.Result{}, r.provision(ctx, rt, p, id, log)
}

// progress returns what the simulator remembers of rt, starting to remember
// it now.
func (r *reconciler) progress(rt *im.Runtime) *progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.state[rt.UID]; ok {
		return p
	}
	p := &progress{}
	if rt.Status.State == im.StateReady {
		// Made Ready before this process started: what it made Ready is the
		// current spec.
		p.applied, p.applying = rt.Generation, rt.Generation
	}
	r.state[rt.UID] = p
	return p
}

func (r *reconciler) begin(p *progress, generation int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.applying, p.since = generation, r.now()
}

func (r *reconciler) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, uid)
}

// fault injects the configured fault, if any, into the rollout of rt's
// generation. stop says the reconcile ends here with res.
func (r *reconciler) fault(ctx context.Context, rt *im.Runtime, p *progress, log logrus.FieldLogger) (res reconcile.Result, stop bool, err error) {
	if r.faults == nil {
		return reconcile.Result{}, false, nil
	}
	now := r.now()
	r.mu.Lock()
	faulted, ends := p.faulted == rt.Generation, p.faultEnds
	r.mu.Unlock()
	if faulted {
		if left := ends.Sub(now); left > 0 {
			return reconcile.Result{RequeueAfter: left}, true, nil
		}
		if rt.Status.State == im.StateFailed {
			// Recovered: the infrastructure manager retries and goes through
			// Pending again.
			log.Info("the injected Gardener error is over: retrying")
			err := r.setStatus(ctx, rt, im.StatePending, im.ConditionProvisioned, metav1.ConditionUnknown,
				im.ReasonProcessing, "Shoot is pending after a Gardener error")
			return reconcile.Result{RequeueAfter: max(r.delay, staleRetry)}, true, err
		}
		return reconcile.Result{}, false, nil
	}
	f := r.faults(rt)
	if f == nil {
		return reconcile.Result{}, false, nil
	}
	if !failedWith(rt, im.ReasonGardenerError, f.Message) {
		if err := r.setStatus(ctx, rt, im.StateFailed, im.ConditionProvisioned, metav1.ConditionFalse, im.ReasonGardenerError, f.Message); err != nil {
			return reconcile.Result{}, true, err
		}
		log.WithFields(logrus.Fields{"message": f.Message, "permanent": f.Permanent}).Info("Runtime failed, as configured")
	}
	if f.Permanent {
		// Failed while the fault lasts: the infrastructure manager's
		// periodic reconciliation tries again.
		return reconcile.Result{RequeueAfter: max(r.delay, time.Second)}, true, nil
	}
	d := f.Duration
	if d <= 0 {
		d = max(r.delay, time.Second)
	}
	r.mu.Lock()
	p.faulted, p.faultEnds = rt.Generation, now.Add(d)
	r.mu.Unlock()
	return reconcile.Result{RequeueAfter: d}, true, nil
}

// failedWith reports whether rt is Failed with the newest condition's reason
// and message.
func failedWith(rt *im.Runtime, reason, message string) bool {
	c := im.Newest(rt.Status.Conditions)
	return rt.Status.State == im.StateFailed && c != nil && c.Reason == reason && c.Message == message
}

// refusal is why the infrastructure manager would not work on rt: a
// required label missing, or not exactly the one Kyma worker pool.
func refusal(rt *im.Runtime) string {
	for _, l := range requiredLabels {
		if rt.Labels[l] == "" {
			return "missing required label " + l
		}
	}
	if w := rt.Spec.Shoot.Provider.Workers; len(w) != 1 || w[0].Name != im.KymaWorkerName {
		return fmt.Sprintf("spec.shoot.provider.workers must hold exactly the worker pool %s", im.KymaWorkerName)
	}
	return ""
}

// provision gives the runtime a cluster, publishes its kubeconfig and marks
// it Ready: shoot created (or the change applied), kubeconfig written, OIDC
// and administrators configured.
func (r *reconciler) provision(ctx context.Context, rt *im.Runtime, p *progress, id string, log logrus.FieldLogger) error {
	if err := r.ensureShoot(ctx, rt); err != nil {
		return err
	}
	kubeconfig, err := r.clusters.Ensure(ctx, id)
	if err != nil {
		return fmt.Errorf("giving runtime %s a cluster: %w", id, err)
	}
	// The Secret first: whoever sees Ready must find the kubeconfig.
	if err := r.applyKubeconfig(ctx, rt, id, kubeconfig); err != nil {
		return err
	}
	r.mu.Lock()
	first := p.applied == 0 && !rt.Status.ProvisioningCompleted
	r.mu.Unlock()
	if rt.Status.State != im.StateReady || p.applied != rt.Generation {
		reason, msg := im.ReasonConfigurationCompleted, "Runtime processing completed successfully"
		if first {
			reason, msg = im.ReasonShootCreationCompleted, "Shoot creation completed"
		}
		if err := r.writeStatus(ctx, rt, im.StateReady, readyConditions(reason, msg)); err != nil {
			return err
		}
	}
	r.mu.Lock()
	p.applied = rt.Generation
	r.mu.Unlock()
	log.Info("Runtime ready, kubeconfig written")
	return nil
}

// readyConditions are a Ready Runtime's conditions, the Provisioned one
// saying what was completed.
func readyConditions(reason, message string) []metav1.Condition {
	return []metav1.Condition{
		{Type: im.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: reason, Message: message},
		{Type: im.ConditionKubeconfigReady, Status: metav1.ConditionTrue, Reason: im.ReasonGardenerClusterReady, Message: "Gardener Cluster CR is ready"},
		{Type: im.ConditionOIDCConfigured, Status: metav1.ConditionTrue, Reason: im.ReasonOIDCConfigured, Message: "OIDC configuration completed"},
		{Type: im.ConditionConfigured, Status: metav1.ConditionTrue, Reason: im.ReasonConfigurationCompleted, Message: "Runtime processing completed successfully"},
	}
}

// tearDown stops the cluster, deletes the kubeconfig and lets the CR go.
func (r *reconciler) tearDown(ctx context.Context, rt *im.Runtime, id string, log logrus.FieldLogger) error {
	if !controllerutil.ContainsFinalizer(rt, im.Finalizer) {
		return nil
	}
	if rt.Status.State != im.StateTerminating {
		if err := r.setStatus(ctx, rt, im.StateTerminating, im.ConditionDeprovisioned, metav1.ConditionUnknown,
			im.ReasonDeletion, "Runtime deletion initialised"); err != nil {
			return err
		}
	}
	if err := r.clusters.Release(id); err != nil {
		return fmt.Errorf("tearing down runtime %s: %w", id, err)
	}
	if err := r.deleteShoot(ctx, rt); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rt.Namespace, Name: im.KubeconfigSecretName(id)}}
	if err := client.IgnoreNotFound(r.client.Delete(ctx, secret)); err != nil {
		return fmt.Errorf("deleting kubeconfig secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	base := rt.DeepCopy()
	controllerutil.RemoveFinalizer(rt, im.Finalizer)
	// Optimistic lock: a merge patch replaces the whole finalizer list, which
	// must not drop a finalizer someone added meanwhile.
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := client.IgnoreNotFound(r.client.Patch(ctx, rt, patch)); err != nil {
		return fmt.Errorf("removing finalizer from Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	r.forget(rt.UID)
	log.Info("Runtime deleted: cluster gone, kubeconfig removed")
	return nil
}

// ensureFinalizer adds the infrastructure manager's finalizer.
func (r *reconciler) ensureFinalizer(ctx context.Context, rt *im.Runtime) error {
	if controllerutil.ContainsFinalizer(rt, im.Finalizer) {
		return nil
	}
	base := rt.DeepCopy()
	controllerutil.AddFinalizer(rt, im.Finalizer)
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Patch(ctx, rt, patch); err != nil {
		return fmt.Errorf("adding finalizer to Runtime %s/%s: %w", rt.Namespace, rt.Name, err)
	}
	return nil
}

// setStatus writes the state and one condition, the others kept.
func (r *reconciler) setStatus(ctx context.Context, rt *im.Runtime, state im.State, condType string, status metav1.ConditionStatus, reason, message string) error {
	return r.writeStatus(ctx, rt, state, []metav1.Condition{{Type: condType, Status: status, Reason: reason, Message: message}})
}

// writeStatus writes the state and the conditions, as the infrastructure
// manager does: a condition's lastTransitionTime moves only when its status
// changes.
func (r *reconciler) writeStatus(ctx context.Context, rt *im.Runtime, state im.State, conds []metav1.Condition) error {
	base := rt.DeepCopy()
	rt.Status.State = state
	for _, c := range conds {
		c.LastTransitionTime = metav1.NewTime(r.now())
		meta.SetStatusCondition(&rt.Status.Conditions, c)
	}
	if state == im.StateReady {
		rt.Status.ProvisioningCompleted = true
	}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, rt, patch); err != nil {
		return fmt.Errorf("setting Runtime %s/%s to %s: %w", rt.Namespace, rt.Name, state, err)
	}
	return nil
}

// applyKubeconfig writes the kubeconfig Secret with server-side apply, so a
// repeat (or a rewrite after a restart) needs no read. It carries the
// Runtime's labels, as the infrastructure manager's does: Lifecycle Manager
// finds it by operator.kyma-project.io/kyma-name, keb's watch by the
// runtime ID.
func (r *reconciler) applyKubeconfig(ctx context.Context, rt *im.Runtime, runtimeID string, kubeconfig []byte) error {
	name := im.KubeconfigSecretName(runtimeID)
	labels := map[string]string{}
	for k, v := range rt.Labels {
		labels[k] = v
	}
	labels[controlplane.LabelRuntimeID] = runtimeID
	secret := corev1ac.Secret(name, rt.Namespace).
		WithLabels(labels).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{im.KubeconfigKey: kubeconfig})
	if err := r.client.Apply(ctx, secret, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing kubeconfig secret %s/%s: %w", rt.Namespace, name, err)
	}
	return nil
}
