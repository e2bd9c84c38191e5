package process

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// The control-plane watch holds an object per runtime of each kind it
// watches, so its memory grows with the fleet: at 100,000 runtimes every
// byte kept per object is 300 KB per replica. It therefore keeps only what
// keb reads (docs/performance.md, "Fleet scale"):
//
//   - Only objects labelled with a runtime ID (controlplane.LabelRuntimeID):
//     the watch acts on nothing else (Watcher.changed), and the namespace
//     holds other Secrets (overrides, credentials) that are none of its
//     business.
//   - Kubeconfig Secrets as metadata only: keb needs their names, never a
//     kubeconfig.
//   - Of every object, its name, namespace, resource version, deletion and
//     the labels keb selects by (watchLabels); of a Runtime CR its status
//     (state and conditions), of a Kyma CR its state and its modules'
//     states. Spec, annotations, finalizers, owner references, UID and
//     managed fields stay out of memory, and strings every runtime repeats
//     (condition reasons, module names) are held once (shared).
//
// A reader of the watch (Seen, SeenList) that needs more than this must
// add it here, or read the API server.

// watchLabels are the labels the watch keeps: the runtime ID (which runtime
// an event is about) and the instance ID (SeenList selects a provisioning's
// Runtime CRs by it).
var watchLabels = []string{controlplane.LabelRuntimeID, controlplane.LabelInstanceID}

// hasRuntimeID selects the objects of a runtime.
var hasRuntimeID = func() labels.Selector {
	req, err := labels.NewRequirement(controlplane.LabelRuntimeID, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}()

// kubeconfigSecrets is the watch's form of a Secret: its metadata only.
func kubeconfigSecrets() *metav1.PartialObjectMetadata {
	s := &metav1.PartialObjectMetadata{}
	s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return s
}

// watchCacheOptions is the watch's cache: namespace's objects labelled with
// a runtime ID, slimmed by their kind's transform.
func watchCacheOptions(scheme *k8sruntime.Scheme, namespace string) cache.Options {
	return cache.Options{
		Scheme:               scheme,
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: hasRuntimeID,
		ByObject: map[client.Object]cache.ByObject{
			&infrastructuremanager.Runtime{}: {Transform: slimRuntime},
			&kyma.Kyma{}:                     {Transform: slimKyma},
			kubeconfigSecrets():              {Transform: slimMetadata},
		},
		// Seen reads only what is watched; another kind is an error,
		// not a new watch.
		ReaderFailOnMissingInformer: true,
	}
}

// slimMeta is the part of an object's metadata the watch keeps. Strings
// every object repeats (the namespace) are shared, and a label equal to the
// name (a runtime ID is its Runtime and Kyma CR's name) shares the name's:
// each decoded string is an allocation of its own, per object.
func slimMeta(m metav1.Object) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.GetName(), Namespace: unique.Make(m.GetNamespace()).Value(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(), DeletionTimestamp: m.GetDeletionTimestamp()}
	have := m.GetLabels()
	for _, k := range watchLabels {
		if v, ok := have[k]; ok {
			if out.Labels == nil {
				out.Labels = make(map[string]string, len(watchLabels))
			}
			if v == out.Name {
				v = out.Name
			}
			out.Labels[k] = v
		}
	}
	return out
}

// shared is s as one copy shared by every object holding it: condition
// types, reasons and messages, module names and states repeat across the
// fleet.
func shared(s string) string { return unique.Make(s).Value() }

// slimRuntime keeps of a Runtime CR what the steps waiting on it read: its
// status (state and conditions; RuntimeWait, infrastructuremanager.Write)
// and its identity, labels and deletion (existingRuntimeID).
func slimRuntime(obj any) (any, error) {
	rt, ok := obj.(*infrastructuremanager.Runtime)
	if !ok {
		return obj, nil
	}
	slim := &infrastructuremanager.Runtime{TypeMeta: rt.TypeMeta, ObjectMeta: slimMeta(rt),
		Status: infrastructuremanager.RuntimeStatus{State: infrastructuremanager.State(shared(string(rt.Status.State)))}}
	if len(rt.Status.Conditions) > 0 {
		slim.Status.Conditions = make([]metav1.Condition, len(rt.Status.Conditions))
	}
	for i, c := range rt.Status.Conditions {
		slim.Status.Conditions[i] = metav1.Condition{Type: shared(c.Type), Status: metav1.ConditionStatus(shared(string(c.Status))),
			ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime,
			Reason: shared(c.Reason), Message: shared(c.Message)}
	}
	return slim, nil
}

// slimKyma keeps of a Kyma CR its identity, labels, deletion and status.state
// and modules (name, state and message: kyma.HealthOf). Spec, conditions
// and the modules' tracking objects stay out of memory (a few KB per
// runtime).
func slimKyma(obj any) (any, error) {
	k, ok := obj.(*kyma.Kyma)
	if !ok {
		return obj, nil
	}
	slim := &kyma.Kyma{TypeMeta: k.TypeMeta, ObjectMeta: slimMeta(k)}
	slim.Status.State = kyma.State(shared(string(k.Status.State)))
	if len(k.Status.Modules) > 0 {
		slim.Status.Modules = make([]kyma.ModuleStatus, 0, len(k.Status.Modules))
	}
	for _, m := range k.Status.Modules {
		slim.Status.Modules = append(slim.Status.Modules, kyma.ModuleStatus{Name: shared(m.Name),
			State: kyma.State(shared(string(m.State))), Message: shared(m.Message)})
	}
	return slim, nil
}

// slimMetadata keeps of a Secret's metadata what the watch reads: its name
// and runtime ID (endsAWait, awaitsReady).
func slimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: slimMeta(m)}, nil
}
