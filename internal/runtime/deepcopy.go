package runtime

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// Hand-written deep copies: the kyma-project modules (and their generated code)
// are not available, and the types are small enough to copy field by field.

var (
	_ k8sruntime.Object = (*Runtime)(nil)
	_ k8sruntime.Object = (*RuntimeList)(nil)
)

// DeepCopyInto copies r into out; out shares no memory with r afterwards.
func (r *Runtime) DeepCopyInto(out *Runtime) {
	*out = *r
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	r.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a deep copy of r.
func (r *Runtime) DeepCopy() *Runtime {
	if r == nil {
		return nil
	}
	out := new(Runtime)
	r.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (r *Runtime) DeepCopyObject() k8sruntime.Object { return r.DeepCopy() }

// DeepCopyInto copies l into out; out shares no memory with l afterwards.
func (l *RuntimeList) DeepCopyInto(out *RuntimeList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Runtime, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of l.
func (l *RuntimeList) DeepCopy() *RuntimeList {
	if l == nil {
		return nil
	}
	out := new(RuntimeList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *RuntimeList) DeepCopyObject() k8sruntime.Object { return l.DeepCopy() }

// DeepCopyInto copies s into out; out shares no memory with s afterwards.
func (s *RuntimeSpec) DeepCopyInto(out *RuntimeSpec) {
	*out = *s
	if s.Shoot.Provider.Workers != nil {
		out.Shoot.Provider.Workers = make([]Worker, len(s.Shoot.Provider.Workers))
		for i, w := range s.Shoot.Provider.Workers {
			out.Shoot.Provider.Workers[i] = w
			out.Shoot.Provider.Workers[i].Zones = cloneStrings(w.Zones)
		}
	}
	out.Security.Administrators = cloneStrings(s.Security.Administrators)
	out.Kyma.Components = cloneStrings(s.Kyma.Components)
}

// cloneStrings copies a slice, keeping nil as nil so a round trip stays equal.
func cloneStrings(in []string) []string {
	if in == nil {
		return nil
	}
	return append(make([]string, 0, len(in)), in...)
}
