package kyma

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the field manager of keb's writes to Kyma CRs: the control plane records which
// fields keb set, apart from Lifecycle Manager's and operators'.
const FieldManager = "keb"

// Apply creates the Kyma CR k or, when it exists (a step run again), sets keb's fields of it to
// k's: one server-side apply by FieldManager, forcing keb's ownership of exactly the labels, the
// annotations, spec.channel and the spec.modules entries k holds. Fields other managers own
// (Lifecycle Manager's finalizer, an operator's spec.skipMaintenanceWindows, a module's
// controller, whose entries spec.modules keys by name) are left alone, which no write of a
// whole object decoded into keb's types could promise. k's status is never sent.
func Apply(ctx context.Context, c client.Client, k *Kyma) error {
	u, err := ApplyObject(k)
	if err != nil {
		return err
	}
	err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("applying Kyma CR %s/%s: %w", k.Namespace, k.Name, err)
	}
	return nil
}

// ApplyObject is the object Apply sends for k: its identity, labels and annotations, and its
// spec as keb sets it (fields keb leaves unset are left out, so that keb claims none of them).
func ApplyObject(k *Kyma) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&k.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding Kyma CR %s/%s: %w", k.Namespace, k.Name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(GroupVersion.WithKind(Kind))
	u.SetNamespace(k.Namespace)
	u.SetName(k.Name)
	u.SetLabels(k.Labels)
	u.SetAnnotations(k.Annotations)
	return u, nil
}

// PatchLabels changes the labels of the Kyma CR namespace/name from before to after, with a JSON
// merge patch of only the labels that differ: a changed or new one is set, one in before but not
// in after is removed. Labels neither holds (Lifecycle Manager's, operators') are not touched,
// and nothing is sent when before and after agree. It reports whether it wrote.
func PatchLabels(ctx context.Context, c client.Client, namespace, name string, before, after map[string]string) (bool, error) {
	set, removed := LabelChanges(before, after)
	changes := map[string]any{}
	for k, v := range set {
		changes[k] = v
	}
	for _, k := range removed {
		changes[k] = nil
	}
	if len(changes) == 0 {
		return false, nil
	}
	return true, mergePatch(ctx, c, namespace, name, map[string]any{"metadata": map[string]any{"labels": changes}})
}

// SetChannel sets spec.channel of the Kyma CR namespace/name with a JSON merge patch of that field
// alone.
func SetChannel(ctx context.Context, c client.Client, namespace, name, channel string) error {
	return mergePatch(ctx, c, namespace, name, map[string]any{"spec": map[string]any{"channel": channel}})
}

func mergePatch(ctx context.Context, c client.Client, namespace, name string, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding patch of Kyma CR %s/%s: %w", namespace, name, err)
	}
	k := &Kyma{}
	k.Namespace, k.Name = namespace, name
	if err := c.Patch(ctx, k, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patching Kyma CR %s/%s: %w", namespace, name, err)
	}
	return nil
}

// LabelChanges is what PatchLabels changes: the labels of after that differ from before, and
// those of before that after drops.
func LabelChanges(before, after map[string]string) (set map[string]string, removed []string) {
	set = map[string]string{}
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			set[k] = v
		}
	}
	for k := range maps.Keys(before) {
		if _, ok := after[k]; !ok {
			removed = append(removed, k)
		}
	}
	return set, removed
}
