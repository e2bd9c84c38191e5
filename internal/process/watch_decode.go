package process

import (
	"context"
	gojson "encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/json"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// The watch decodes what the API server serves straight into small structs
// holding only what watchTransform reads (watchedRuntime, watchedKyma,
// watchedSecret), not into keb's Runtime and Kyma types: a Runtime CR's spec,
// its twelve labels, annotations and managed fields, a Kyma CR's spec,
// conditions and modules' tracking objects are skipped by the JSON decoder
// and never become Go values. At start the watch decodes the whole fleet
// three times over (docs/performance.md, "Fleet scale": what decoding a
// first list costs is what bounds a replica's memory right after start), and
// after it every change of every runtime.
//
// The JSON is decoded as the API machinery decodes it (sigs.k8s.io/json:
// keys match case-sensitively), one list item or watch event at a time from
// the response body, so no list is ever held as bytes either.

// watchedMeta is what the watch reads of an object's metadata. The label and
// annotation keys are struct tags, so they are spelled out here:
// TestTheWatchDecodesTheLabelsKebSelectsBy checks them against
// controlplane's.
type watchedMeta struct {
	Name              string       `json:"name"`
	Namespace         string       `json:"namespace"`
	ResourceVersion   string       `json:"resourceVersion"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	Labels            struct {
		RuntimeID  string `json:"kyma-project.io/runtime-id"`
		InstanceID string `json:"kyma-project.io/instance-id"`
	} `json:"labels"`
	Annotations struct {
		// InitialEventsEnd marks the bookmark ending a streamed first
		// list (metav1.InitialEventsAnnotationKey).
		InitialEventsEnd string `json:"k8s.io/initial-events-end"`
	} `json:"annotations"`

	// accessor is the metadata as client-go's reflector reads it
	// (meta.Accessor: name, namespace, resource version, the bookmark's
	// annotation), filled once decoded (settle).
	accessor metav1.ObjectMeta
}

// settle fills the reflector's view of m after decoding.
func (m *watchedMeta) settle() {
	m.accessor = metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp}
	if m.Annotations.InitialEventsEnd != "" {
		m.accessor.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: m.Annotations.InitialEventsEnd}
	}
}

func (m *watchedMeta) deepCopy() watchedMeta {
	c := *m
	if m.DeletionTimestamp != nil {
		c.DeletionTimestamp = m.DeletionTimestamp.DeepCopy()
	}
	c.settle()
	return c
}

// watchedObject is what the watch decodes of one object.
type watchedObject interface {
	k8sruntime.Object
	metav1.ObjectMetaAccessor
	meta() *watchedMeta
}

// watchedRuntime is what the watch reads of a Runtime CR: its metadata and
// its status as the infrastructure manager reports it (state and
// conditions).
type watchedRuntime struct {
	Metadata watchedMeta `json:"metadata"`
	Status   struct {
		State      im.State           `json:"state"`
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// watchedKyma is what the watch reads of a Kyma CR: its metadata and its
// health as kyma.HealthOf reads it (state, and each module's name, state
// and message).
type watchedKyma struct {
	Metadata watchedMeta `json:"metadata"`
	Status   struct {
		State   kyma.State          `json:"state"`
		Modules []kyma.ModuleHealth `json:"modules"`
	} `json:"status"`
}

// watchedSecret is what the watch reads of a Secret: its metadata, which is
// all the API server sends (as PartialObjectMetadata).
type watchedSecret struct {
	Metadata watchedMeta `json:"metadata"`
}

var (
	_ watchedObject = (*watchedRuntime)(nil)
	_ watchedObject = (*watchedKyma)(nil)
	_ watchedObject = (*watchedSecret)(nil)
)

func (o *watchedRuntime) meta() *watchedMeta               { return &o.Metadata }
func (o *watchedRuntime) GetObjectMeta() metav1.Object     { return &o.Metadata.accessor }
func (o *watchedRuntime) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (o *watchedKyma) meta() *watchedMeta                  { return &o.Metadata }
func (o *watchedKyma) GetObjectMeta() metav1.Object        { return &o.Metadata.accessor }
func (o *watchedKyma) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }
func (o *watchedSecret) meta() *watchedMeta                { return &o.Metadata }
func (o *watchedSecret) GetObjectMeta() metav1.Object      { return &o.Metadata.accessor }
func (o *watchedSecret) GetObjectKind() schema.ObjectKind  { return schema.EmptyObjectKind }
func (o *watchedSecret) DeepCopyObject() k8sruntime.Object {
	return &watchedSecret{Metadata: o.Metadata.deepCopy()}
}
func (l *watchedList) GetObjectKind() schema.ObjectKind     { return schema.EmptyObjectKind }
func (l *watchedList) DeepCopyObject() k8sruntime.Object    { return l.deepCopy() }
func (o *watchedRuntime) DeepCopyObject() k8sruntime.Object { return o.deepCopy() }
func (o *watchedKyma) DeepCopyObject() k8sruntime.Object    { return o.deepCopy() }

func (o *watchedRuntime) deepCopy() *watchedRuntime {
	c := *o
	c.Metadata = o.Metadata.deepCopy()
	c.Status.Conditions = slices.Clone(o.Status.Conditions)
	return &c
}

func (o *watchedKyma) deepCopy() *watchedKyma {
	c := *o
	c.Metadata = o.Metadata.deepCopy()
	c.Status.Modules = slices.Clone(o.Status.Modules)
	return &c
}

// watchedList is a list of one kind as the watch decodes it.
type watchedList struct {
	metav1.ListMeta
	Items []k8sruntime.Object
}

func (l *watchedList) deepCopy() *watchedList {
	c := &watchedList{Items: make([]k8sruntime.Object, len(l.Items))}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i, o := range l.Items {
		c.Items[i] = o.DeepCopyObject()
	}
	return c
}

// kindClient lists and watches one kind in the watch's namespace, only
// objects labelled with a runtime ID (hasRuntimeID), decoding them as
// watchedObjects.
type kindClient struct {
	rest      rest.Interface
	namespace string
	resource  string
	// listAccept and watchAccept are the media types asked for: JSON, as
	// PartialObjectMetadata for a kind read as metadata only.
	listAccept, watchAccept string
	newObject               func() watchedObject
}

// newKindClient is the kindClient of kind k, served as mapping says.
func newKindClient(cfg *rest.Config, httpClient *http.Client, scheme *k8sruntime.Scheme, mapping *meta.RESTMapping, namespace string, k watchedKind) (*kindClient, error) {
	c := rest.CopyConfig(cfg)
	gv := mapping.Resource.GroupVersion()
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	// Only the API server's errors (a metav1.Status) are decoded through
	// the scheme; objects are decoded here.
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the client of %s: %w", mapping.Resource, err)
	}
	kc := &kindClient{rest: rc, namespace: namespace, resource: mapping.Resource.Resource, newObject: k.newObject,
		listAccept: "application/json", watchAccept: "application/json"}
	if k.metadataOnly {
		kc.listAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
		kc.watchAccept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	}
	return kc, nil
}

// listSink takes a list's objects as they are decoded (kindStore), so that
// the list holds none.
type listSink interface {
	// beginList: a list starts (again) from its first page.
	beginList()
	listed(watchedObject)
}

// listWatch is the kind's ListerWatcher for a reflector: its lists hand
// their objects to sink as they are decoded and return none, so that keb
// never holds a list (client-go's own streamed lists, WatchList, keep every
// object until the list's end).
//
// A list is asked for as a watch that starts with the kind's objects
// (streamList). At 100,000 runtimes an unpaged LIST of the Runtime or Kyma
// CRs did not end within the API server's 60-second request timeout on the
// test control plane: each CR is converted and encoded into one response, and
// every retry started another while the abandoned ones still ran, until the
// API server held 20 GB (docs/performance.md, "Fleet scale"). Paged, at
// 30,000 runtimes, two replicas' lists took the test API server 437 s of
// CPU and 6 minutes instead of 68 s and 84 s. A watch is not bound by the
// request timeout and is sent one object at a time from the watch cache.
func (c *kindClient) listWatch(sink listSink) toolscache.ListerWatcher {
	return unstreamedListWatch{&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
			// Neither list is paged (no continue token is ever returned):
			// every call lists from the start.
			sink.beginList()
			l, err := c.streamList(ctx, opts, sink.listed)
			if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
				// An API server that refuses sendInitialEvents (its WatchList
				// feature off) is asked for the whole list instead.
				opts.Limit, opts.Continue = 0, ""
				sink.beginList()
				return c.list(ctx, opts, sink.listed)
			}
			return l, err
		},
		WatchFuncWithContext: c.watch,
	}}
}

// streamListTimeout bounds a streamed list: one that has not ended by then
// fails, and the reflector lists again (after its backoff).
const streamListTimeout = 10 * time.Minute

// streamList lists the kind at opts' resource version (or newer) as a watch
// that begins with the kind's objects as ADDED events and marks their end
// with a bookmark (sendInitialEvents), handing each object to listed as it
// is decoded. It returns an empty list at the bookmark's resource version,
// from which the reflector then watches.
func (c *kindClient) streamList(ctx context.Context, opts metav1.ListOptions, listed func(watchedObject)) (k8sruntime.Object, error) {
	initial := true
	timeout := int64(streamListTimeout / time.Second)
	opts.Watch, opts.SendInitialEvents, opts.AllowWatchBookmarks = true, &initial, true
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	opts.Limit, opts.Continue, opts.TimeoutSeconds = 0, "", &timeout
	body, err := c.request(opts, c.watchAccept).Stream(ctx)
	if err != nil {
		return nil, err
	}
	d := newEventDecoder(body, c.newObject)
	defer d.Close()
	l, err := readInitialEvents(d, listed)
	if err != nil {
		return nil, fmt.Errorf("streaming a list of %s: %w", c.resource, err)
	}
	return l, nil
}

// readInitialEvents reads a streamed list's events up to the bookmark that
// ends them.
func readInitialEvents(d *eventDecoder, listed func(watchedObject)) (*watchedList, error) {
	for {
		typ, obj, err := d.Decode()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the API server ended the stream before the list's end")
		}
		if err != nil {
			return nil, err
		}
		switch typ {
		case watch.Added, watch.Modified:
			listed(obj.(watchedObject))
		case watch.Bookmark:
			if m := obj.(watchedObject).meta(); m.Annotations.InitialEventsEnd == "true" {
				return &watchedList{ListMeta: metav1.ListMeta{ResourceVersion: m.ResourceVersion}}, nil
			}
		case watch.Error:
			return nil, apierrors.FromObject(obj)
		default:
			return nil, fmt.Errorf("a %s event among a list's objects", typ)
		}
	}
}

// unstreamedListWatch tells client-go's reflector to list, not to stream its
// lists as watches (watchlist.DoesClientNotSupportWatchListSemantics).
type unstreamedListWatch struct{ *toolscache.ListWatch }

func (unstreamedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (c *kindClient) request(opts metav1.ListOptions, accept string) *rest.Request {
	opts.LabelSelector = hasRuntimeID.String()
	return c.rest.Get().Namespace(c.namespace).Resource(c.resource).
		VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", accept)
}

// list lists the kind in one response, handing each object to listed as it
// is decoded.
func (c *kindClient) list(ctx context.Context, opts metav1.ListOptions, listed func(watchedObject)) (k8sruntime.Object, error) {
	body, err := c.request(opts, c.listAccept).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	l, err := decodeList(body, c.newObject, listed)
	if err != nil {
		return nil, fmt.Errorf("decoding a list of %s: %w", c.resource, err)
	}
	return l, nil
}

// watch opens a watch as client-go's Request.Watch does: a connection lost
// before the API server answered is an empty watch (the reflector watches
// again from where it was), not an error (which would make it list again).
func (c *kindClient) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	body, err := c.request(opts, c.watchAccept).Timeout(timeout).Stream(ctx)
	if err != nil {
		if utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	return watch.NewStreamWatcher(newEventDecoder(body, c.newObject),
		// as client-go's watches report a stream they cannot decode
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}

// decodeList decodes a list of one kind, one item at a time, handing each
// to listed (the list then holds none) or, when listed is nil, into the
// list.
func decodeList(r io.Reader, newObject func() watchedObject, listed func(watchedObject)) (*watchedList, error) {
	dec := json.NewDecoderCaseSensitivePreserveInts(r)
	l := &watchedList{}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch key {
		case "metadata":
			err = dec.Decode(&l.ListMeta)
		case "items":
			err = decodeItems(dec, l, newObject, listed)
		default:
			err = dec.Decode(&gojson.RawMessage{}) // kind, apiVersion
		}
		if err != nil {
			return nil, err
		}
	}
	return l, expectDelim(dec, '}')
}

func decodeItems(dec json.Decoder, l *watchedList, newObject func() watchedObject, listed func(watchedObject)) error {
	if t, err := dec.Token(); err != nil || t == nil {
		return err // "items": null
	} else if t != gojson.Delim('[') {
		return fmt.Errorf("items are %v, not a list", t)
	}
	for dec.More() {
		o := newObject()
		if err := dec.Decode(o); err != nil {
			return err
		}
		o.meta().settle()
		if listed != nil {
			listed(o)
			continue
		}
		l.Items = append(l.Items, o)
	}
	return expectDelim(dec, ']')
}

// eventDecoder decodes a watch's events (metav1.WatchEvent as JSON), an
// event's object straight into a watchedObject, or, for an ERROR event, a
// metav1.Status.
type eventDecoder struct {
	body      io.ReadCloser
	dec       json.Decoder
	newObject func() watchedObject
}

func newEventDecoder(body io.ReadCloser, newObject func() watchedObject) *eventDecoder {
	return &eventDecoder{body: body, dec: json.NewDecoderCaseSensitivePreserveInts(body), newObject: newObject}
}

// Decode returns the next event; io.EOF when the API server ended the
// watch.
func (d *eventDecoder) Decode() (watch.EventType, k8sruntime.Object, error) {
	if err := expectDelim(d.dec, '{'); err != nil {
		return "", nil, err
	}
	var (
		typ watch.EventType
		obj k8sruntime.Object
		raw gojson.RawMessage // an object served before its type
	)
	for d.dec.More() {
		key, err := d.dec.Token()
		if err != nil {
			return "", nil, unexpectedEOF(err)
		}
		switch {
		case key == "type":
			err = d.dec.Decode(&typ)
		case key == "object" && typ != "":
			obj, err = d.decodeObject(typ, d.dec.Decode)
		case key == "object":
			err = d.dec.Decode(&raw)
		default:
			err = d.dec.Decode(&gojson.RawMessage{})
		}
		if err != nil {
			return "", nil, unexpectedEOF(err)
		}
	}
	if err := expectDelim(d.dec, '}'); err != nil {
		return "", nil, unexpectedEOF(err)
	}
	if obj == nil && raw != nil {
		var err error
		obj, err = d.decodeObject(typ, func(v any) error { return json.UnmarshalCaseSensitivePreserveInts(raw, v) })
		if err != nil {
			return "", nil, err
		}
	}
	if typ == "" || obj == nil {
		return "", nil, errors.New("a watch event without its type or object")
	}
	return typ, obj, nil
}

func (d *eventDecoder) decodeObject(typ watch.EventType, decode func(any) error) (k8sruntime.Object, error) {
	if typ == watch.Error {
		s := &metav1.Status{}
		return s, decode(s)
	}
	o := d.newObject()
	if err := decode(o); err != nil {
		return nil, err
	}
	o.meta().settle()
	return o, nil
}

func (d *eventDecoder) Close() { _ = d.body.Close() }

// unexpectedEOF is the end of a watch's stream in the middle of an event.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func expectDelim(dec json.Decoder, want gojson.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("unexpected %v in the API server's JSON, want %v", t, want)
	}
	return nil
}

// watchedKind is a kind the watch lists and watches, the object it decodes
// each into, and the part of a runtime's record it fills.
type watchedKind struct {
	gvk schema.GroupVersionKind
	// metadataOnly: the API server sends the objects' metadata only.
	metadataOnly bool
	newObject    func() watchedObject
	part         uint8
}

// watchedKinds are the watch's kinds. Secrets are watched as metadata only:
// the watcher needs their names, never their kubeconfigs.
func watchedKinds() []watchedKind {
	return []watchedKind{
		{gvk: im.GroupVersion.WithKind("Runtime"), newObject: func() watchedObject { return &watchedRuntime{} }, part: hasRuntime},
		{gvk: kyma.GroupVersion.WithKind(kyma.Kind), newObject: func() watchedObject { return &watchedKyma{} }, part: hasKyma},
		{gvk: corev1.SchemeGroupVersion.WithKind("Secret"), metadataOnly: true,
			newObject: func() watchedObject { return &watchedSecret{} }, part: hasKubeconfig},
	}
}
