package process

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// The control-plane watch holds something per runtime, so its memory grows
// with the fleet: at 100,000 runtimes every byte kept per runtime is 100 KB
// per replica. It therefore keeps one compact record per runtime (seenRuntime)
// of exactly what keb reads, fed by client-go's reflectors (watch.go) instead
// of typed informer caches, which would hold three Go objects, three cache
// keys and a namespace index entry per runtime (docs/performance.md, "Fleet
// scale"):
//
//   - Only objects labelled with a runtime ID (controlplane.LabelRuntimeID):
//     the watch acts on nothing else (Watcher.changed), and the namespace
//     holds other Secrets (overrides, credentials) that are none of its
//     business. The selection is the API server's (hasRuntimeID).
//   - Kubeconfig Secrets as metadata only, and of them whether the runtime's
//     one exists: keb needs no kubeconfig, and no other Secret's metadata.
//   - Of a Runtime CR its state and conditions (RuntimeWait and
//     infrastructuremanager.Write read them, Explain shows the newest), its
//     deletion and its instance label (Initialization.existingRuntimeID).
//   - Of a Kyma CR its health as kyma.HealthOf computes it (state, modules'
//     names, states and messages) and its resource version (KymaStates
//     orders what it writes by it).
//
// Strings that many runtimes repeat (states, conditions, module lists) are
// held once (unique.Make), not per runtime. A reader of the watch (Seen,
// SeenList) that needs more than this must add it here, or read the API
// server.

// hasRuntimeID selects the objects of a runtime.
var hasRuntimeID = func() labels.Selector {
	req, err := labels.NewRequirement(controlplane.LabelRuntimeID, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return labels.NewSelector().Add(*req)
}()

// The parts of a runtime the watch has seen.
const (
	hasRuntime uint8 = 1 << iota
	hasKyma
	hasKubeconfig
)

// seenRuntime is what the watch holds of one runtime. Runtime and Kyma CRs
// are named kyma.Name(runtimeID) (create_runtime, apply_kyma), so a runtime's
// two CRs and its kubeconfig Secret share one record, stored under that name.
// It is a value in the store's map, kept at most 128 bytes so that the map
// holds it inline.
type seenRuntime struct {
	// id is the runtime ID label, the record's name when that is lower case.
	id  string
	has uint8
	// listed marks the parts the running list of their kind has listed
	// (kindStore.listed), so that its end finds what it lacked.
	listed uint8
	rt     runtimePart
	kyma   kymaPart
}

// runtimePart is what the watch keeps of a Runtime CR.
type runtimePart struct {
	// instance is its instance ID label.
	instance string
	// deleted is its deletionTimestamp in Unix seconds, 0 if none.
	deleted int64
	state   unique.Handle[im.State]
	conds   []seenCondition
}

// condition is a Runtime CR condition but its transition time: the
// infrastructure manager reports the same few across the fleet.
type condition struct{ Type, Status, Reason, Message string }

// seenCondition is a condition as the watch keeps it: the shared part and
// its lastTransitionTime in Unix seconds (what the API serves, and what
// infrastructuremanager.Fingerprint reads). ObservedGeneration is not kept:
// no step reads it.
type seenCondition struct {
	c  unique.Handle[condition]
	at int64
}

// kymaPart is what the watch keeps of a Kyma CR.
type kymaPart struct {
	version int64
	state   unique.Handle[kyma.State]
	// modules is the modules' health, encoded (encodeModules): one copy
	// for every runtime with the same modules in the same states.
	modules unique.Handle[string]
}

// What the watch applies to its store: each object as watchTransform slims
// it the moment it is decoded (a list's objects) or the reflector hands it
// over (a watch's), so that the decoded objects are garbage once applied.
// An event holds nothing the record does not.
type (
	runtimeEvent struct {
		name, id string
		runtimePart
	}
	kymaEvent struct {
		name, id string
		kymaPart
	}
	secretEvent struct{ name, id string }
)

// watchTransform slims a decoded object (watch_decode.go) into what the
// watch applies.
func watchTransform(obj any) (any, error) {
	switch o := obj.(type) {
	case *watchedRuntime:
		return newRuntimeEvent(o), nil
	case *watchedKyma:
		return newKymaEvent(o), nil
	case *watchedSecret:
		return &secretEvent{name: o.Metadata.Name, id: o.Metadata.Labels.RuntimeID}, nil
	default:
		return obj, nil
	}
}

func newRuntimeEvent(rt *watchedRuntime) *runtimeEvent {
	e := &runtimeEvent{name: rt.Metadata.Name, id: rt.Metadata.Labels.RuntimeID}
	if e.id == e.name {
		e.id = e.name // one string for both: each decoded string is an allocation of its own
	}
	e.instance = rt.Metadata.Labels.InstanceID
	if rt.Metadata.DeletionTimestamp != nil {
		e.deleted = rt.Metadata.DeletionTimestamp.Unix()
	}
	e.state = unique.Make(rt.Status.State)
	if len(rt.Status.Conditions) > 0 {
		e.conds = make([]seenCondition, len(rt.Status.Conditions))
	}
	for i, c := range rt.Status.Conditions {
		e.conds[i] = seenCondition{c: unique.Make(condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}),
			at: c.LastTransitionTime.Unix()}
	}
	return e
}

func newKymaEvent(k *watchedKyma) *kymaEvent {
	e := &kymaEvent{name: k.Metadata.Name, id: k.Metadata.Labels.RuntimeID}
	if e.id == e.name {
		e.id = e.name
	}
	// resourceVersions are etcd revisions in every API server keb runs
	// against; one that is not a number is written unconditionally.
	e.version, _ = strconv.ParseInt(k.Metadata.ResourceVersion, 10, 64)
	e.state = unique.Make(k.Status.State)
	e.modules = unique.Make(encodeModules(k.Status.Modules))
	return e
}

// encodeModules is the modules' health as one comparable string.
func encodeModules(m []kyma.ModuleHealth) string {
	if len(m) == 0 {
		return ""
	}
	// Encoding plain structs of strings cannot fail.
	b, _ := json.Marshal(m)
	return string(b)
}

// conditions are the Runtime CR's conditions as the API served them, but
// for their observedGeneration.
func (p runtimePart) conditions() []metav1.Condition {
	if len(p.conds) == 0 {
		return nil
	}
	out := make([]metav1.Condition, len(p.conds))
	for i, sc := range p.conds {
		c := sc.c.Value()
		out[i] = metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: metav1.NewTime(time.Unix(sc.at, 0))}
	}
	return out
}

// health is the Kyma CR's health as kyma.HealthOf read it.
func (p kymaPart) health() kyma.Health {
	h := kyma.Health{State: p.state.Value()}
	if m := p.modules.Value(); m != "" {
		// The watch encoded it (encodeModules).
		_ = json.Unmarshal([]byte(m), &h.Modules)
	}
	return h
}

// seenStore is what the running watch has seen: one record per runtime.
// The watch's three kinds write it concurrently; steps read it.
type seenStore struct {
	namespace string

	mu       sync.RWMutex
	runtimes map[string]seenRuntime
}

func newSeenStore(namespace string) *seenStore {
	return &seenStore{namespace: unique.Make(namespace).Value(), runtimes: map[string]seenRuntime{}}
}

// putRuntime stores a Runtime CR and returns what was there before, if
// anything.
func (s *seenStore) putRuntime(e *runtimeEvent) (old *runtimeEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runtimes[e.name]
	if r.has&hasRuntime != 0 {
		old = &runtimeEvent{name: e.name, id: r.id, runtimePart: r.rt}
	}
	r.id, r.has, r.rt = e.id, r.has|hasRuntime, e.runtimePart
	s.put(e.name, r)
	return old
}

// putKyma stores a Kyma CR and returns what was there before, if anything.
func (s *seenStore) putKyma(e *kymaEvent) (old *kymaPart) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runtimes[e.name]
	if r.has&hasKyma != 0 {
		prev := r.kyma
		old = &prev
	}
	r.id, r.has, r.kyma = e.id, r.has|hasKyma, e.kymaPart
	s.put(e.name, r)
	return old
}

// putKubeconfig records that runtimeID's kubeconfig Secret exists and
// reports whether it did before.
func (s *seenStore) putKubeconfig(runtimeID string) (had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := kyma.Name(runtimeID) // runtimeID itself when it is lower case
	r := s.runtimes[name]
	had = r.has&hasKubeconfig != 0
	r.id, r.has = runtimeID, r.has|hasKubeconfig
	s.put(name, r)
	return had
}

// put stores r under name. Storing replaces the map's key string too, so the
// key is the record's runtime ID when they are the same: one string per
// record, not two.
func (s *seenStore) put(name string, r seenRuntime) {
	if r.id == name {
		name = r.id
	}
	s.runtimes[name] = r
}

// remove forgets part of the record name and returns the record as it was.
func (s *seenStore) remove(name string, part uint8) (old seenRuntime, had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runtimes[name]
	if !ok || r.has&part == 0 {
		return r, false
	}
	old = r
	r.has &^= part
	switch part {
	case hasRuntime:
		r.rt = runtimePart{}
	case hasKyma:
		r.kyma = kymaPart{}
	}
	if r.has == 0 {
		delete(s.runtimes, name)
	} else {
		s.put(name, r)
	}
	return old, true
}

// get returns the record name.
func (s *seenStore) get(name string) (seenRuntime, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.runtimes[name]
	return r, ok
}

// runtimeState is the state of the Runtime CR name, if the watch has seen it.
func (s *seenStore) runtimeState(name string) (im.State, bool) {
	r, ok := s.get(name)
	if !ok || r.has&hasRuntime == 0 {
		return "", false
	}
	return r.rt.state.Value(), true
}

// kubeconfig returns the record of the runtime whose kubeconfig Secret is
// named name, if the watch has seen that Secret.
func (s *seenStore) kubeconfig(name string) (seenRuntime, bool) {
	id, ok := strings.CutPrefix(name, im.KubeconfigSecretName(""))
	if !ok {
		return seenRuntime{}, false
	}
	r, ok := s.get(kyma.Name(id))
	return r, ok && r.has&hasKubeconfig != 0 && r.id == id
}

// kubeconfigName is the name of the kubeconfig Secret of the runtime a
// record is of.
func kubeconfigName(r seenRuntime) string { return im.KubeconfigSecretName(r.id) }

// seen fills obj with what the store holds under key: a Runtime CR, a Kyma
// CR or a kubeconfig Secret's metadata (metav1.PartialObjectMetadata of kind
// Secret). Any other kind is not watched.
func (s *seenStore) seen(key client.ObjectKey, obj client.Object) bool {
	if key.Namespace != s.namespace {
		return false
	}
	switch o := obj.(type) {
	case *im.Runtime:
		r, ok := s.get(key.Name)
		if !ok || r.has&hasRuntime == 0 {
			return false
		}
		*o = s.runtimeObject(key.Name, r)
	case *kyma.Kyma:
		r, ok := s.get(key.Name)
		if !ok || r.has&hasKyma == 0 {
			return false
		}
		*o = s.kymaObject(key.Name, r)
	case *metav1.PartialObjectMetadata:
		if o.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Secret") {
			return false
		}
		r, ok := s.kubeconfig(key.Name)
		if !ok {
			return false
		}
		gvk := o.GroupVersionKind()
		*o = s.secretObject(r)
		o.SetGroupVersionKind(gvk)
	default:
		return false
	}
	return true
}

func (s *seenStore) meta(name string, r seenRuntime, instance string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{controlplane.LabelRuntimeID: r.id}}
	if instance != "" {
		m.Labels[controlplane.LabelInstanceID] = instance
	}
	return m
}

func (s *seenStore) runtimeObject(name string, r seenRuntime) im.Runtime {
	rt := im.Runtime{ObjectMeta: s.meta(name, r, r.rt.instance),
		Status: im.RuntimeStatus{State: r.rt.state.Value(), Conditions: r.rt.conditions()}}
	if r.rt.deleted != 0 {
		t := metav1.NewTime(time.Unix(r.rt.deleted, 0))
		rt.DeletionTimestamp = &t
	}
	return rt
}

func (s *seenStore) kymaObject(name string, r seenRuntime) kyma.Kyma {
	k := kyma.Kyma{ObjectMeta: s.meta(name, r, "")}
	k.ResourceVersion = strconv.FormatInt(r.kyma.version, 10)
	h := r.kyma.health()
	k.Status.State = h.State
	for _, m := range h.Modules {
		k.Status.Modules = append(k.Status.Modules, kyma.ModuleStatus{Name: m.Name, State: m.State, Message: m.Message})
	}
	return k
}

func (s *seenStore) secretObject(r seenRuntime) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: s.meta(kubeconfigName(r), r, "")}
}

// recordLabels are the labels a record's objects carry that the watch
// keeps, for label selectors, without a map per record.
type recordLabels struct{ id, instance string }

func (l recordLabels) Lookup(label string) (string, bool) {
	switch {
	case label == controlplane.LabelRuntimeID:
		return l.id, true
	case label == controlplane.LabelInstanceID && l.instance != "":
		return l.instance, true
	}
	return "", false
}

func (l recordLabels) Has(label string) bool { _, ok := l.Lookup(label); return ok }

func (l recordLabels) Get(label string) string { v, _ := l.Lookup(label); return v }

// list fills list (a RuntimeList, KymaList or a Secrets'
// PartialObjectMetadataList) with what the store holds of its kind in the
// namespace, selected by the options' label selector. Field selectors are
// not supported: it returns false.
func (s *seenStore) list(list client.ObjectList, opts ...client.ListOption) bool {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	if (lo.Namespace != "" && lo.Namespace != s.namespace) || lo.FieldSelector != nil {
		return false
	}
	sel := lo.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	var part uint8
	switch l := list.(type) {
	case *im.RuntimeList:
		part, l.Items = hasRuntime, nil
	case *kyma.KymaList:
		part, l.Items = hasKyma, nil
	case *metav1.PartialObjectMetadataList:
		if l.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("SecretList") {
			return false
		}
		part, l.Items = hasKubeconfig, nil
	default:
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, r := range s.runtimes {
		if r.has&part == 0 {
			continue
		}
		ls := recordLabels{id: r.id}
		if part == hasRuntime {
			ls.instance = r.rt.instance
		}
		if !sel.Matches(ls) {
			continue
		}
		switch l := list.(type) {
		case *im.RuntimeList:
			l.Items = append(l.Items, s.runtimeObject(name, r))
		case *kyma.KymaList:
			l.Items = append(l.Items, s.kymaObject(name, r))
		case *metav1.PartialObjectMetadataList:
			l.Items = append(l.Items, s.secretObject(r))
		}
	}
	return true
}

// markListed marks the record of a listed object (as watchTransform slimmed
// it) as listed for part; the runtime's other Secrets have no record.
func (s *seenStore) markListed(e any, part uint8) {
	var name string
	switch o := e.(type) {
	case *runtimeEvent:
		name = o.name
	case *kymaEvent:
		name = o.name
	case *secretEvent:
		if o.name != im.KubeconfigSecretName(o.id) {
			return
		}
		name = kyma.Name(o.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runtimes[name]; ok && r.has&part != 0 {
		r.listed |= part
		s.put(name, r)
	}
}

// unmarkListed forgets what a list of part marked.
func (s *seenStore) unmarkListed(part uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.runtimes {
		if r.listed&part != 0 {
			r.listed &^= part
			s.runtimes[name] = r
		}
	}
}

// unlisted ends a list of part: it returns what the store holds of part
// that the list did not mark, as the deletions to apply (the objects as
// watchTransform slimmed them), and forgets the marks.
func (s *seenStore) unlisted(part uint8) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []any
	for name, r := range s.runtimes {
		if r.has&part != 0 && r.listed&part == 0 {
			switch part {
			case hasRuntime:
				gone = append(gone, &runtimeEvent{name: name, id: r.id, runtimePart: r.rt})
			case hasKyma:
				gone = append(gone, &kymaEvent{name: name, id: r.id, kymaPart: r.kyma})
			case hasKubeconfig:
				gone = append(gone, &secretEvent{name: kubeconfigName(r), id: r.id})
			}
		}
		if r.listed&part != 0 {
			r.listed &^= part
			s.runtimes[name] = r
		}
	}
	return gone
}
