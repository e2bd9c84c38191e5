package infrastructuremanager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the manager name keb's writes to Runtime CRs carry
// (metadata.managedFields).
const FieldManager = "keb"

// Fields is part of a Runtime CR as JSON decodes it (map[string]any with
// string, bool, float64, []any and map[string]any values): the fields one
// operation sets, and only those; a nil value removes the field. Build it
// with Set.
type Fields map[string]any

// Set puts value at path (map keys from the object's root) into f, creating
// the maps on the way. value is encoded to JSON and decoded again, so typed
// values (a []string, a struct of this package) take the shape the patch
// compares with.
func (f Fields) Set(value any, path ...string) error {
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", strings.Join(path, "."), err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decoding %s: %w", strings.Join(path, "."), err)
	}
	m := map[string]any(f)
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
	return nil
}

// whole marks a value of Fields that replaces the CR's value as a whole
// when they differ, instead of merging into it: a list of named objects
// that must lose the entries it does not list (SetWhole).
type whole struct{ value any }

// SetWhole is Set for a value that replaces the field as a whole when it
// differs (Patch merges named lists by name and never removes entries).
func (f Fields) SetWhole(value any, path ...string) error {
	if err := f.Set(value, path...); err != nil {
		return err
	}
	m := map[string]any(f)
	for _, k := range path[:len(path)-1] {
		m = m[k].(map[string]any)
	}
	last := path[len(path)-1]
	m[last] = whole{m[last]}
	return nil
}

// Patch changes the Runtime CR under key to carry fields, and nothing else:
// it reads the CR, and writes a JSON patch (RFC 6902) of only the values
// that differ, so that every field keb does not set (or does not know)
// stays as it is. Maps merge key by key; a list of objects with a "name"
// (the worker pools) merges entry by entry by name, adding missing entries
// at its end; any other list, and every scalar, is replaced. The patch
// carries the resourceVersion read, so a concurrent write makes it fail
// with a conflict (a step's error: it runs again on a fresh read), and strict
// field validation, so a field the CRD does not know is refused rather than
// pruned. It returns the CR as written (as read, when nothing differed) and
// whether the patch changed its spec (metadata.generation).
func Patch(ctx context.Context, c client.Client, key client.ObjectKey, fields Fields) (*Runtime, bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GroupVersion.WithKind("Runtime"))
	if err := c.Get(ctx, key, u); err != nil {
		return nil, false, err
	}
	ops := diff(u.Object, fields, "")
	var generation int64
	if len(ops) > 0 {
		generation = u.GetGeneration()
		// The precondition: the API server refuses the patch with a
		// conflict when the object changed since it was read.
		ops = append([]patchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: u.GetResourceVersion()}}, ops...)
		raw, err := json.Marshal(ops)
		if err != nil {
			return nil, false, fmt.Errorf("encoding the Runtime CR patch: %w", err)
		}
		if err := c.Patch(ctx, u, client.RawPatch(types.JSONPatchType, raw), client.FieldOwner(FieldManager),
			client.FieldValidation("Strict")); err != nil {
			return nil, false, fmt.Errorf("patching Runtime CR %s: %w", key, err)
		}
	}
	rt := &Runtime{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rt); err != nil {
		return nil, false, fmt.Errorf("decoding Runtime CR %s: %w", key, err)
	}
	return rt, len(ops) > 0 && rt.Generation != generation, nil
}

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// diff returns the operations that make current carry want (see Patch for
// the merge rules). at is current's JSON pointer.
func diff(current, want map[string]any, at string) []patchOp {
	var ops []patchOp
	for _, k := range sortedKeys(want) {
		w, path := want[k], at+"/"+escape(k)
		c, ok := current[k]
		if wv, isWhole := w.(whole); isWhole {
			switch {
			case !ok:
				ops = append(ops, patchOp{Op: "add", Path: path, Value: wv.value})
			case !equal(c, wv.value):
				ops = append(ops, patchOp{Op: "replace", Path: path, Value: wv.value})
			}
			continue
		}
		switch {
		case w == nil:
			if ok {
				ops = append(ops, patchOp{Op: "remove", Path: path})
			}
		case !ok && onlyRemovals(w):
			// Nothing to remove under a field that does not exist.
		case !ok:
			ops = append(ops, patchOp{Op: "add", Path: path, Value: withoutNils(w)})
		case isMap(c) && isMap(w):
			ops = append(ops, diff(c.(map[string]any), w.(map[string]any), path)...)
		case isNamedList(c) && isNamedList(w):
			ops = append(ops, diffNamed(c.([]any), w.([]any), path)...)
		case !equal(c, w):
			ops = append(ops, patchOp{Op: "replace", Path: path, Value: w})
		}
	}
	return ops
}

// onlyRemovals reports a map all of whose values are removals (nil), at any
// depth.
func onlyRemovals(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if x != nil && !onlyRemovals(x) {
			return false
		}
	}
	return true
}

// withoutNils drops the removals (nil values) from a value that is added
// whole: there is nothing to remove under a field that does not exist.
func withoutNils(v any) any {
	if wv, ok := v.(whole); ok {
		return wv.value
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if x != nil {
			out[k] = withoutNils(x)
		}
	}
	return out
}

// diffNamed merges a list of named objects entry by entry.
func diffNamed(current, want []any, at string) []patchOp {
	var ops []patchOp
	for _, w := range want {
		name := w.(map[string]any)["name"]
		i := 0
		for ; i < len(current) && current[i].(map[string]any)["name"] != name; i++ {
		}
		if i == len(current) {
			ops = append(ops, patchOp{Op: "add", Path: at + "/-", Value: withoutNils(w)})
			continue
		}
		ops = append(ops, diff(current[i].(map[string]any), w.(map[string]any), at+"/"+strconv.Itoa(i))...)
	}
	return ops
}

func isMap(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// isNamedList reports a non-empty list whose every entry is an object with a
// string name.
func isNamedList(v any) bool {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return false
	}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return true
}

// equal compares two decoded JSON values; numbers compare by value whether
// they were decoded as int64 (from the API server) or float64 (Set).
func equal(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && reflect.DeepEqual(ja, jb)
}

// escape encodes a map key as a JSON pointer segment (RFC 6901): label keys
// hold slashes.
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// sortedKeys makes patches deterministic: the same change always writes the
// same bytes.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
