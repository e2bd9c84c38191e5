package lmsim

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// Finalizer is Lifecycle Manager's finalizer on Kyma CRs: it holds a Kyma CR
// until the modules' resources are removed from the runtime.
const Finalizer = "operator.kyma-project.io/Kyma"

// conditionModules is the status condition saying whether every module is Ready.
const conditionModules = "Modules"

// reconciler plays Lifecycle Manager for one Kyma CR.
type reconciler struct {
	client   client.Client
	runtimes *runtimeClients
	opts     Options
	log      logrus.FieldLogger
	now      func() time.Time

	mu sync.Mutex
	// firstSeen is when each runtime's module ("<kyma>/<module>") was first
	// seen, for Options.Delay. A restarted stand-in starts counting again.
	firstSeen map[string]time.Time
	// unchanged counts each Kyma CR's reconciles in a row that changed
	// nothing, for the requeue's backoff.
	unchanged map[string]int
}

// maxBackoff bounds a Kyma CR's requeue interval, in Resyncs.
const maxBackoff = 64

var _ reconcile.Reconciler = (*reconciler)(nil)

// Reconcile reports on one Kyma CR, and on deletion removes its modules'
// resources from the runtime and lets the CR go.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k := &kyma.Kyma{}
	if err := r.client.Get(ctx, req.NamespacedName, k); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	log := r.log.WithFields(logrus.Fields{"kyma": req.NamespacedName.String(), "runtime_id": k.Labels[controlplane.LabelRuntimeID]})
	if !k.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.delete(ctx, k, log)
	}
	if !controllerutil.ContainsFinalizer(k, Finalizer) {
		base := k.DeepCopy()
		controllerutil.AddFinalizer(k, Finalizer)
		if err := r.client.Patch(ctx, k, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	status, err := r.status(ctx, k, log)
	if err != nil {
		return reconcile.Result{}, err
	}
	wrote, err := r.writeStatus(ctx, k, status)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.requeue(k.Name, wrote, status.State)}, nil
}

// requeue is when to look at a Kyma CR again: Lifecycle Manager learns of
// its modules' CRs' changes from its runtime watcher, which the stand-in
// does not run, so it looks again: after Resync while something changes,
// backing off (doubling up to maxBackoff × Resync) while nothing does, and
// at that bound once Ready. A runtime left in Warning (no Secret for BTP
// Manager) costs a handful of looks, not one a second.
func (r *reconciler) requeue(name string, changed bool, state kyma.State) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if changed {
		r.unchanged[name] = 0
	} else {
		r.unchanged[name]++
	}
	if state == kyma.StateReady {
		return maxBackoff * r.opts.Resync
	}
	return min(r.opts.Resync<<min(r.unchanged[name], 6), maxBackoff*r.opts.Resync)
}

// status works out the Kyma CR's status: the watcher's verdict on the
// skr-domain annotation, then each module's state in the runtime.
func (r *reconciler) status(ctx context.Context, k *kyma.Kyma, log logrus.FieldLogger) (kyma.KymaStatus, error) {
	st := kyma.KymaStatus{ActiveChannel: k.Spec.Channel, Modules: []kyma.ModuleStatus{}}
	if !r.opts.NoWatcher && k.Annotations[controlplane.AnnotationSKRDomain] == "" {
		st.State, st.Operation = kyma.StateError,
			"failed to set up the runtime watcher: the Kyma CR has no "+controlplane.AnnotationSKRDomain+" annotation"
		st.Modules = k.Status.Modules
		return st, nil
	}
	rc, kubeconfig, err := r.runtime(ctx, k)
	if err != nil {
		return st, err
	}
	for _, m := range k.Spec.Modules {
		st.Modules = append(st.Modules, r.module(ctx, rc, k, m, log))
	}
	// Modules no longer listed: their default CRs go with them.
	for _, old := range k.Status.Modules {
		if rc != nil && !kyma.HasModule(k.Spec.Modules, old.Name) && old.Name == kyma.ModuleBTPOperator {
			if err := removeBTPOperator(ctx, rc); err != nil {
				log.WithError(err).Warn("removing the btp-operator module's default CR")
				r.runtimes.forget(kubeconfig)
			}
		}
	}
	st.State = aggregate(st.Modules)
	ready := metav1.ConditionTrue
	msg := "all modules are in Ready state"
	if st.State != kyma.StateReady {
		ready, msg = metav1.ConditionFalse, "not all modules are in Ready state"
	}
	st.Conditions = []metav1.Condition{{Type: conditionModules, Status: ready, Reason: "Ready", Message: msg,
		ObservedGeneration: k.Generation}}
	st.Operation = "kyma is " + string(st.State)
	if p := kyma.HealthOf(&kyma.Kyma{Status: st}).Problems(); p != "" {
		st.Operation = p
	}
	if rc == nil && st.State != kyma.StateError {
		st.Operation = "waiting for the runtime's kubeconfig Secret"
	}
	return st, nil
}

// module reports one spec.modules entry, installing it once its delay passed
// and the runtime (rc, nil until its kubeconfig is there) can be reached.
func (r *reconciler) module(ctx context.Context, rc *runtimeCluster, k *kyma.Kyma, m kyma.Module, log logrus.FieldLogger) kyma.ModuleStatus {
	channel := m.Channel
	if channel == "" {
		channel = k.Spec.Channel
	}
	ms := kyma.ModuleStatus{Name: m.Name, FQDN: "kyma-project.io/module/" + m.Name, Channel: channel}
	if m.Managed != nil && !*m.Managed {
		ms.State = kyma.StateUnmanaged
		return ms
	}
	channels, known := r.opts.Catalog[m.Name]
	switch {
	case !known:
		ms.State, ms.Message = kyma.StateError, fmt.Sprintf("module template for module %q not found", m.Name)
		return ms
	case !slices.Contains(channels, channel):
		ms.State, ms.Message = kyma.StateError, fmt.Sprintf("no versions found for channel %q of module %q", channel, m.Name)
		return ms
	}
	if wait := r.since(k.Name + "/" + m.Name).Add(r.opts.Delay).Sub(r.now()); wait > 0 || rc == nil {
		ms.State = kyma.StateProcessing
		return ms
	}
	if m.Name != kyma.ModuleBTPOperator {
		ms.State = kyma.StateReady
		return ms
	}
	state, err := installBTPOperator(ctx, rc, m.CustomResourcePolicy != controlplane.CustomResourcePolicyIgnore)
	if err != nil {
		log.WithError(err).Warn("installing the btp-operator module")
		ms.State, ms.Message = kyma.StateProcessing, "installing: "+err.Error()
		return ms
	}
	ms.State = state
	return ms
}

// since is when key was first seen.
func (r *reconciler) since(key string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.firstSeen[key]
	if !ok {
		t = r.now()
		r.firstSeen[key] = t
	}
	return t
}

// aggregate is Lifecycle Manager's rule: Error if a module is in Error,
// else Warning, else Processing, else Ready.
func aggregate(modules []kyma.ModuleStatus) kyma.State {
	for _, s := range []kyma.State{kyma.StateError, kyma.StateWarning, kyma.StateProcessing} {
		if slices.ContainsFunc(modules, func(m kyma.ModuleStatus) bool { return m.State == s }) {
			return s
		}
	}
	return kyma.StateReady
}

// runtime finds the runtime's kubeconfig as Lifecycle Manager does (the
// Secret labelled with the Kyma CR's name) and returns its client; nil when
// the Secret is not there yet.
func (r *reconciler) runtime(ctx context.Context, k *kyma.Kyma) (*runtimeCluster, []byte, error) {
	var secrets corev1.SecretList
	if err := r.client.List(ctx, &secrets, client.InNamespace(k.Namespace), client.MatchingLabels{controlplane.LabelKymaName: k.Name}); err != nil {
		return nil, nil, fmt.Errorf("finding the kubeconfig of %s: %w", k.Name, err)
	}
	for _, s := range secrets.Items {
		if cfg := s.Data[infrastructuremanager.KubeconfigKey]; len(cfg) > 0 {
			c, err := r.runtimes.client(cfg)
			return c, cfg, err
		}
	}
	return nil, nil, nil
}

// writeStatus writes st unless the CR already reports it (lastUpdateTime
// aside, so that an unchanged status costs no write and no watch event), and
// says whether it wrote.
func (r *reconciler) writeStatus(ctx context.Context, k *kyma.Kyma, st kyma.KymaStatus) (bool, error) {
	old := k.Status.DeepCopy()
	st.LastUpdateTime, old.LastUpdateTime = metav1.Time{}, metav1.Time{}
	for i := range old.Conditions {
		old.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	if reflect.DeepEqual(*old, st) {
		return false, nil
	}
	now := metav1.NewTime(r.now())
	st.LastUpdateTime = now
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = now
		for _, o := range k.Status.Conditions {
			if o.Type == st.Conditions[i].Type && o.Status == st.Conditions[i].Status {
				st.Conditions[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	base := k.DeepCopy()
	k.Status = st
	if err := r.client.Status().Patch(ctx, k, client.MergeFrom(base)); err != nil {
		return false, fmt.Errorf("writing the status of Kyma %s/%s: %w", k.Namespace, k.Name, client.IgnoreNotFound(err))
	}
	return true, nil
}

// delete reports Deleting, removes the modules' default CRs from the runtime
// (if it is still there) and removes the finalizer.
func (r *reconciler) delete(ctx context.Context, k *kyma.Kyma, log logrus.FieldLogger) error {
	if !controllerutil.ContainsFinalizer(k, Finalizer) {
		return nil
	}
	if k.Status.State != kyma.StateDeleting {
		st := *k.Status.DeepCopy()
		st.State, st.Operation = kyma.StateDeleting, "deleting the modules"
		if _, err := r.writeStatus(ctx, k, st); err != nil {
			return err
		}
	}
	if kyma.HasModule(k.Spec.Modules, kyma.ModuleBTPOperator) {
		if rc, kubeconfig, err := r.runtime(ctx, k); err == nil && rc != nil {
			if err := removeBTPOperator(ctx, rc); err != nil {
				// The runtime may be gone already: Lifecycle Manager's purge gives up on it too.
				log.WithError(err).Info("could not remove the btp-operator module's default CR; the runtime may be gone")
			}
			r.runtimes.forget(kubeconfig)
		}
	}
	r.mu.Lock()
	for _, m := range k.Spec.Modules {
		delete(r.firstSeen, k.Name+"/"+m.Name)
	}
	delete(r.unchanged, k.Name)
	r.mu.Unlock()
	base := k.DeepCopy()
	controllerutil.RemoveFinalizer(k, Finalizer)
	if err := r.client.Patch(ctx, k, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing the finalizer of Kyma %s/%s: %w", k.Namespace, k.Name, err)
	}
	log.Info("Kyma CR deleted")
	return nil
}
