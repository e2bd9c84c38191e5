package process

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// served is obj (a Runtime CR, a Kyma CR or a Secret's
// PartialObjectMetadata) as the watch decodes it from the API server's JSON
// of a watch event.
func served(t *testing.T, obj k8sruntime.Object) watchedObject {
	t.Helper()
	var newObject func() watchedObject
	switch obj.(type) {
	case *im.Runtime:
		newObject = watchedKinds()[0].newObject
	case *kyma.Kyma:
		newObject = watchedKinds()[1].newObject
	case *metav1.PartialObjectMetadata:
		newObject = watchedKinds()[2].newObject
	default:
		t.Fatalf("the watch decodes no %T", obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	event := append(append([]byte(`{"type":"MODIFIED","object":`), raw...), '}')
	typ, got, err := newEventDecoder(io.NopCloser(bytes.NewReader(event)), newObject).Decode()
	if err != nil || typ != watch.Modified {
		t.Fatalf("decoding %s: %s, %v", event, typ, err)
	}
	return got.(watchedObject)
}

// TestTheWatchDecodesTheLabelsKebSelectsBy: the label and annotation keys
// the watch decodes are struct tags (watchedMeta), spelled out; they must be
// the keys keb selects by and the API server marks a streamed list's end
// with.
func TestTheWatchDecodesTheLabelsKebSelectsBy(t *testing.T) {
	t.Parallel()
	meta := reflect.TypeFor[watchedMeta]()
	tag := func(field, inner string) string {
		f, _ := meta.FieldByName(field)
		g, _ := f.Type.FieldByName(inner)
		return strings.Split(g.Tag.Get("json"), ",")[0]
	}
	for _, tc := range []struct{ got, want string }{
		{tag("Labels", "RuntimeID"), controlplane.LabelRuntimeID},
		{tag("Labels", "InstanceID"), controlplane.LabelInstanceID},
		{tag("Annotations", "InitialEventsEnd"), metav1.InitialEventsAnnotationKey},
	} {
		if tc.got != tc.want {
			t.Errorf("the watch decodes the key %q, keb's is %q", tc.got, tc.want)
		}
	}
}

// TestTheWatchDecodesEventsAndListsAsTheAPIServerSendsThem: a watch stream
// of events (a bookmark ending a streamed first list, an ERROR with its
// Status, an object whose type comes after it) and a list decode into what
// client-go's reflector reads: the type, the resource version, the
// bookmark's annotation, the Status, the list's continue token and items.
func TestTheWatchDecodesEventsAndListsAsTheAPIServerSendsThem(t *testing.T) {
	t.Parallel()
	newObject := watchedKinds()[0].newObject
	stream := `{"type":"ADDED","object":{"kind":"Runtime","metadata":{"name":"rt-1","namespace":"kcp-system","resourceVersion":"5",` +
		`"labels":{"kyma-project.io/runtime-id":"rt-1","Kyma-Project.io/runtime-id":"no"},"managedFields":[{"manager":"kim"}]},` +
		`"spec":{"shoot":{"name":"c-1"}},"status":{"state":"Ready"}}}` + "\n" +
		`{"object":{"metadata":{"name":"rt-2","resourceVersion":"6"}},"type":"DELETED"}` + "\n" +
		`{"type":"BOOKMARK","object":{"kind":"Runtime","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n" +
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}}` + "\n" +
		`{"type":"ADDED","object":{"metadata":{"name":"rt-3"`
	d := newEventDecoder(io.NopCloser(strings.NewReader(stream)), newObject)
	typ, obj, err := d.Decode()
	rt, _ := obj.(*watchedRuntime)
	if err != nil || typ != watch.Added || rt == nil || rt.GetObjectMeta().GetResourceVersion() != "5" || rt.Metadata.Labels.RuntimeID != "rt-1" ||
		rt.Status.State != im.StateReady || rt.GetObjectMeta().GetNamespace() != "kcp-system" {
		t.Errorf("the first event decodes to %s %+v, %v", typ, obj, err)
	}
	if typ, obj, err := d.Decode(); err != nil || typ != watch.Deleted || obj.(*watchedRuntime).GetObjectMeta().GetName() != "rt-2" {
		t.Errorf("an event with its object first decodes to %s %+v, %v", typ, obj, err)
	}
	typ, obj, err = d.Decode()
	if m, _ := obj.(watchedObject); err != nil || typ != watch.Bookmark ||
		m.GetObjectMeta().GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" || m.GetObjectMeta().GetResourceVersion() != "7" {
		t.Errorf("the bookmark decodes to %s %+v, %v", typ, obj, err)
	}
	typ, obj, err = d.Decode()
	if s, _ := obj.(*metav1.Status); err != nil || typ != watch.Error || s == nil || s.Reason != metav1.StatusReasonExpired || s.Code != 410 {
		t.Errorf("the ERROR event decodes to %s %+v, %v", typ, obj, err)
	}
	if _, _, err := d.Decode(); err != io.ErrUnexpectedEOF {
		t.Errorf("a stream cut in an event gives %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, err := newEventDecoder(io.NopCloser(strings.NewReader("\n")), newObject).Decode(); err != io.EOF {
		t.Errorf("a stream ended between events gives %v, want io.EOF", err)
	}

	list := `{"kind":"RuntimeList","apiVersion":"infrastructuremanager.kyma-project.io/v1","metadata":{"resourceVersion":"9","continue":"c"},` +
		`"items":[{"metadata":{"name":"rt-1","resourceVersion":"5"},"status":{"state":"Pending","conditions":[{"type":"Provisioned","status":"False",` +
		`"reason":"Processing","message":"m","lastTransitionTime":"2030-01-01T12:00:00Z"}]}},{"metadata":{"name":"rt-2"}}]}`
	l, err := decodeList(strings.NewReader(list), newObject, nil)
	if err != nil || l.ResourceVersion != "9" || l.Continue != "c" || len(l.Items) != 2 {
		t.Fatalf("the list decodes to %+v, %v", l, err)
	}
	first := l.Items[0].(*watchedRuntime)
	if first.GetObjectMeta().GetName() != "rt-1" || len(first.Status.Conditions) != 1 || first.Status.Conditions[0].Message != "m" ||
		first.Status.Conditions[0].LastTransitionTime.Unix() != 1893499200 {
		t.Errorf("the list's first item decodes to %+v", first)
	}
	if l, err := decodeList(strings.NewReader(`{"metadata":{"resourceVersion":"9"},"items":null}`), newObject, nil); err != nil || len(l.Items) != 0 {
		t.Errorf("an empty list decodes to %+v, %v", l, err)
	}
}

// TestAStreamedListEndsAtItsBookmark: a list asked for as a watch
// (sendInitialEvents) hands each object to the store as it is decoded, skips
// the API server's periodic bookmarks, and ends at the bookmark that marks
// the end of the initial events, whose resource version the reflector then
// watches from; an ERROR is the API server's error, and a stream ended before
// that bookmark is no list.
func TestAStreamedListEndsAtItsBookmark(t *testing.T) {
	t.Parallel()
	newObject := watchedKinds()[0].newObject
	added := func(name, rv string) string {
		return `{"type":"ADDED","object":{"metadata":{"name":"` + name + `","resourceVersion":"` + rv + `"},"status":{"state":"Ready"}}}` + "\n"
	}
	read := func(stream string) ([]string, *watchedList, error) {
		var names []string
		l, err := readInitialEvents(newEventDecoder(io.NopCloser(strings.NewReader(stream)), newObject),
			func(o watchedObject) { names = append(names, o.meta().Name) })
		return names, l, err
	}

	names, l, err := read(added("rt-1", "5") +
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6"}}}` + "\n" +
		added("rt-2", "7") +
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n" +
		added("rt-3", "10"))
	if err != nil || l == nil || l.ResourceVersion != "9" || len(l.Items) != 0 || !reflect.DeepEqual(names, []string{"rt-1", "rt-2"}) {
		t.Errorf("the streamed list gives %v and %+v, %v; want rt-1 and rt-2 handed over, an empty list at resource version 9", names, l, err)
	}

	_, _, err = read(added("rt-1", "5") +
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}}` + "\n")
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("an ERROR event gives %v, want the API server's Expired", err)
	}
	if _, l, err := read(added("rt-1", "5")); err == nil {
		t.Errorf("a stream ended before the list's end gives %+v, want an error", l)
	}
	if _, l, err := read(`{"type":"DELETED","object":{"metadata":{"name":"rt-1"}}}` + "\n"); err == nil {
		t.Errorf("a DELETED event among a list's objects gives %+v, want an error", l)
	}
}
