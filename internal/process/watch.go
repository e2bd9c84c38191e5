package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

// waitingJobs marks the operation waiting on a runtime as woken and finds its
// queue job.
type waitingJobs interface {
	WakeRuntime(ctx context.Context, runtimeID string) (jobID int64, wokenAt time.Time, err error)
}

// waker makes a waiting job run now; runningSince is when the job's current
// run began, zero when it was not running (and is now due).
type waker interface {
	Wake(ctx context.Context, jobID int64) (runningSince time.Time, err error)
}

// Watcher wakes operations waiting on the control plane as soon as what
// they wait for changes (a Runtime or Kyma CR's status, a kubeconfig
// Secret), instead of at their next poll, and tells KymaStates what
// Lifecycle Manager reports on each runtime. Polls remain the safety net: a missed event only
// costs latency.
type Watcher struct {
	cfg       *rest.Config
	scheme    *k8sruntime.Scheme
	namespace string
	jobs      waitingJobs
	queue     waker
	log       logrus.FieldLogger
	// MaxRun is the longest one run of a job lasts (the queue's job
	// timeout): a wake-up that finds an older run going retries that long
	// at most.
	MaxRun time.Duration
	// Kyma, when set, is told of every Kyma CR's health (watch_kyma.go).
	Kyma KymaObserver
	// WakeOnKyma makes a Kyma CR turning Ready or Error wake the operation
	// waiting on its runtime: set when provisioning waits for Kyma.
	WakeOnKyma bool

	mu    sync.Mutex
	state WatchState
	// seen is what the running watch has seen once it has synced; nil
	// otherwise.
	seen *seenStore
}

// WatchState says whether the watch runs, for readiness reports.
type WatchState struct {
	Running bool
	// Since is when the watch last started running or stopped.
	Since time.Time
	// Restarts counts the watch's restarts after an error.
	Restarts int
	// LastError is why it last stopped; empty if it never did.
	LastError string
}

// State reports whether the watch runs.
func (w *Watcher) State() WatchState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

func (w *Watcher) setState(running bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.Running != running || w.state.Since.IsZero() {
		w.state.Since = time.Now()
	}
	w.state.Running = running
	if err != nil {
		w.state.LastError = err.Error()
		w.state.Restarts++
	}
}

// Run watches until ctx is done, restarting the watch with backoff (1 s
// doubling to 1 min) whenever it stops: a control plane that is down or
// lacks keb's CRDs at start must not cost the watch for the replica's
// lifetime.
func (w *Watcher) Run(ctx context.Context) {
	const maxBackoff = time.Minute
	restarts := 0
	for ctx.Err() == nil {
		began := time.Now()
		err := w.Start(ctx)
		if ctx.Err() != nil {
			w.setState(false, nil)
			return
		}
		if err == nil {
			err = errors.New("watch ended")
		}
		w.setState(false, err)
		if time.Since(began) > 2*maxBackoff {
			restarts = 0 // it ran a good while: start over
		}
		wait := backoff(restarts, maxBackoff)
		w.log.WithError(err).WithField("retry_in", wait).Warn("control-plane watch stopped; operations poll until it is back")
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		restarts++
	}
}

// SeenReader is what the control-plane watch has seen (Watcher.Seen).
type SeenReader interface {
	Seen(ctx context.Context, key client.ObjectKey, obj client.Object) bool
}

// SeenLister lists what the control-plane watch has seen (Watcher.SeenList).
type SeenLister interface {
	SeenList(ctx context.Context, list client.ObjectList, opts ...client.ListOption) bool
}

// GetAwaited reads the object under key into obj for a step waiting for it
// to reach a state: from what the watch has seen when that is the awaited
// state (awaited(obj) holds), and from the API server otherwise. A watch
// only lags, so a state it has seen was reached: the run a wake-up starts
// finds the change there without a request. A state short of the awaited
// one, an object it has not seen (or seen is nil) are read from the API
// server, which may be ahead; a lagging or stopped watch only costs that
// read.
func GetAwaited(ctx context.Context, seen SeenReader, direct client.Reader, key client.ObjectKey, obj client.Object, awaited func() bool) error {
	if seen != nil && seen.Seen(ctx, key, obj) && awaited() {
		return nil
	}
	return direct.Get(ctx, key, obj)
}

// Seen fills obj (a Runtime CR, a Kyma CR, or a Secret's
// metav1.PartialObjectMetadata) with what the running watch has seen under
// key, and reports whether it has seen it: false while no watch runs, before
// the object's event arrived, and for any other kind. It fills only what the
// watch keeps (watch_store.go): identity, the runtime and instance labels,
// a Runtime CR's deletion, state and conditions, a Kyma CR's health. It may
// lag the API server by moments, but never goes back: an object is in it
// before the event that wakes its operation is handled. So a step may trust
// it for a state it waits for and read the API server otherwise.
func (w *Watcher) Seen(_ context.Context, key client.ObjectKey, obj client.Object) bool {
	s := w.seenStore()
	return s != nil && s.seen(key, obj)
}

// SeenList lists into list what the running watch has seen of its kind
// (Runtime CRs, Kyma CRs, kubeconfig Secrets' metadata), selected by label,
// and reports whether a watch runs: false while none does. A watch lists
// everything when it starts, so an object that existed then is in it.
func (w *Watcher) SeenList(_ context.Context, list client.ObjectList, opts ...client.ListOption) bool {
	s := w.seenStore()
	return s != nil && s.list(list, opts...)
}

func (w *Watcher) seenStore() *seenStore {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

func (w *Watcher) setSeen(s *seenStore) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = s
}

// NewWatcher watches namespace of the control plane at cfg.
func NewWatcher(cfg *rest.Config, scheme *k8sruntime.Scheme, namespace string, jobs waitingJobs, queue waker, log logrus.FieldLogger) *Watcher {
	return &Watcher{cfg: cfg, scheme: scheme, namespace: namespace, jobs: jobs, queue: queue, log: log,
		MaxRun: time.Minute}
}

// Start watches until ctx is done or the watch fails; Run restarts it. Each
// kind is listed and watched by client-go's reflector, decoded as little as
// the watch reads (watch_decode.go), into a kindStore, which slims every
// object as it arrives (watchTransform), applies it to the watch's store
// (one record per runtime) and acts on the change (process). No informer
// cache, queue or list holds the objects in between.
func (w *Watcher) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	httpClient, err := rest.HTTPClientFor(w.cfg)
	if err != nil {
		return fmt.Errorf("creating control-plane watch: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(w.cfg, httpClient)
	if err != nil {
		return fmt.Errorf("creating control-plane watch: %w", err)
	}
	kinds := watchedKinds()
	clients := make([]*kindClient, len(kinds))
	// A kind the control plane does not serve fails the watch, which Run
	// restarts with backoff, rather than a reflector retrying it unseen.
	for i, k := range kinds {
		mapping, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		if err != nil {
			return fmt.Errorf("watching %s: %w", k.gvk.Kind, err)
		}
		if clients[i], err = newKindClient(w.cfg, httpClient, w.scheme, mapping, w.namespace, k); err != nil {
			return err
		}
	}
	store := newSeenStore(w.namespace)
	wakes := &wakeQueue{signal: make(chan struct{}, 1)}
	wg.Go(func() { wakes.run(ctx, w.changed) })
	synced := make([]toolscache.InformerSynced, 0, len(kinds))
	for i, k := range kinds {
		ks := &kindStore{w: w, store: store, wakes: wakes, part: k.part}
		r := toolscache.NewReflectorWithOptions(clients[i].listWatch(ks), k.newObject(), ks,
			toolscache.ReflectorOptions{Name: "control-plane watch"})
		synced = append(synced, ks.synced.Load)
		wg.Go(func() { r.RunWithContext(ctx) })
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return errors.New("control-plane watch never synced")
	}
	w.setState(true, nil)
	w.setSeen(store)
	defer w.setSeen(nil)
	<-ctx.Done()
	return nil
}

// kindStore is a reflector's store (client-go's ReflectorStore) for one
// kind: it applies each object the reflector lists or watches to the
// watch's store at once and acts on the change (Watcher.process), which
// never blocks (a wake-up is queued, a Kyma state handed to KymaStates).
// The reflector calls it from one goroutine, and so does the kind's list
// (listSink), before the reflector's Replace.
type kindStore struct {
	w     *Watcher
	store *seenStore
	wakes *wakeQueue
	part  uint8
	// synced is set once the first list is applied.
	synced atomic.Bool
}

func (k *kindStore) Add(obj any) error    { return k.apply(toolscache.Added, obj, false) }
func (k *kindStore) Update(obj any) error { return k.apply(toolscache.Updated, obj, false) }
func (k *kindStore) Delete(obj any) error { return k.apply(toolscache.Deleted, obj, false) }
func (k *kindStore) Resync() error        { return nil } // no resync period: never called

// The kind's list hands each object to the kindStore as it is decoded
// (listSink), which applies it at once and marks its record listed, so that
// no list of the fleet is ever held: neither the decoded objects of a
// paged list (client-go's reflector collects them before its Replace) nor
// a streamed list's keys and objects (its WatchList keeps them in a store
// of its own until the list's end). At 10,000 runtimes that was a third of
// a replica's live heap at its peak during start, which Go's collector
// lets the heap grow to twice (docs/performance.md, "Fleet scale").

// beginList is a list starting over: what the last attempt marked does not
// count.
func (k *kindStore) beginList() { k.store.unmarkListed(k.part) }

// listed applies one listed object.
func (k *kindStore) listed(obj watchedObject) {
	e, _ := watchTransform(obj)
	k.w.process(k.store, k.wakes, toolscache.Replaced, e, !k.synced.Load())
	k.store.markListed(e, k.part)
}

// Replace ends a list: it applies the objects listed, if the list passed
// any (the kind's list applied them already: listSink), and the deletion of
// what the store holds of the kind that the list lacked (deleted while no
// watch ran).
func (k *kindStore) Replace(list []any, _ string) error {
	if len(list) > 0 {
		k.beginList()
	}
	for _, o := range list {
		obj, ok := o.(watchedObject)
		if !ok {
			return fmt.Errorf("the watch listed %T", o)
		}
		k.listed(obj)
	}
	initialList := !k.synced.Load()
	for _, gone := range k.store.unlisted(k.part) {
		k.w.process(k.store, k.wakes, toolscache.Deleted, gone, initialList)
	}
	k.synced.Store(true)
	return nil
}

func (k *kindStore) apply(typ toolscache.DeltaType, obj any, initialList bool) error {
	e, _ := watchTransform(obj)
	k.w.process(k.store, k.wakes, typ, e, initialList)
	return nil
}

// process applies a change of one object (as watchTransform slimmed it) to
// store, then acts on it: wakes the operation waiting on its runtime when
// the change can end its wait, tells w.Kyma of a Kyma CR's health.
func (w *Watcher) process(store *seenStore, wakes *wakeQueue, typ toolscache.DeltaType, obj any, initialList bool) {
	if typ == toolscache.Deleted {
		w.deleted(store, wakes, obj)
		return
	}
	switch e := obj.(type) {
	case *runtimeEvent:
		if endsAWait(store.putRuntime(e), e) {
			wakes.add(e.id)
		}
	case *secretEvent:
		if e.name != infrastructuremanager.KubeconfigSecretName(e.id) {
			return // another Secret of the runtime: only its deletion wakes
		}
		if !store.putKubeconfig(e.id) && endsAWait(nil, e) && !awaitsReady(store, e) {
			wakes.add(e.id)
		}
	case *kymaEvent:
		w.kymaChanged(store, wakes, e, initialList)
	}
}

// deleted forgets a deleted object; a deletion always wakes (delete_runtime
// and delete_kyma wait for their CRs to be gone).
func (w *Watcher) deleted(store *seenStore, wakes *wakeQueue, obj any) {
	switch e := obj.(type) {
	case *runtimeEvent:
		store.remove(e.name, hasRuntime)
		wakes.add(e.id)
	case *kymaEvent:
		store.remove(e.name, hasKyma)
		w.observeKyma(e.id, e.version, nil)
		wakes.add(e.id)
	case *secretEvent:
		if e.name == infrastructuremanager.KubeconfigSecretName(e.id) {
			store.remove(kyma.Name(e.id), hasKubeconfig)
		}
		wakes.add(e.id)
	}
}

// wakeQueue hands the runtimes whose change can end a wait to one goroutine
// that wakes their operations (a statement each), so that the watch's queues
// never wait for the database: a first list of N runtimes syncs without N
// statements first.
type wakeQueue struct {
	mu     sync.Mutex
	ids    []string
	signal chan struct{}
}

func (q *wakeQueue) add(runtimeID string) {
	if runtimeID == "" {
		return
	}
	q.mu.Lock()
	q.ids = append(q.ids, runtimeID)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// run wakes the queued runtimes' operations until ctx is done.
func (q *wakeQueue) run(ctx context.Context, wake func(context.Context, string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.signal:
		}
		q.mu.Lock()
		ids := q.ids
		q.ids = nil
		q.mu.Unlock()
		for _, id := range ids {
			if ctx.Err() != nil {
				return
			}
			wake(ctx, id)
		}
	}
}

// endsAWait reports whether an added (old nil) or updated object can end a
// wait, so that only such events cost a wake-up (an UPDATE and a job retry).
// Steps wait for a Runtime CR to become Ready (after a change keb wrote: to
// become Ready again, or to show a condition transition while Ready; see
// infrastructuremanager.Write), for a runtime's kubeconfig Secret to exist,
// or for either to be deleted (deletions always wake). Entering Failed wakes
// too: it ends no wait (the infrastructure manager may recover), but the
// waiting operation shows the failure's condition at once rather than at its
// next poll, and Failed is rare. keb's own writes, the infrastructure
// manager's Pending updates, a Failed runtime's new messages and rewrites of
// a Secret end no wait; a step still sees them at its next poll.
func endsAWait(old, updated any) bool {
	switch obj := updated.(type) {
	case *runtimeEvent:
		state := obj.state.Value()
		if state != infrastructuremanager.StateReady && state != infrastructuremanager.StateFailed {
			return false
		}
		prev, _ := old.(*runtimeEvent)
		if prev == nil || prev.state != obj.state {
			return true
		}
		// Ready after Ready: a change applied without leaving Ready shows
		// as a condition's transition.
		return state == infrastructuremanager.StateReady &&
			infrastructuremanager.Fingerprint(prev.conditions()) != infrastructuremanager.Fingerprint(obj.conditions())
	case *secretEvent:
		return old == nil && obj.name == infrastructuremanager.KubeconfigSecretName(obj.id)
	default:
		return false
	}
}

// awaitsReady reports whether s is a kubeconfig Secret whose Runtime CR the
// watch shows short of Ready. Its arrival then ends no wait: check_runtime,
// the one step waiting for the Secret, waits for Ready first, and the Ready
// event wakes it (the infrastructure manager writes the Secret before it
// reports Ready). Waking it for the Secret would run the step only to wait
// again: a wake-up, a run and an API server read per provisioning. A Runtime
// CR the watch has not seen wakes, as before.
func awaitsReady(store *seenStore, s *secretEvent) bool {
	state, ok := store.runtimeState(kyma.Name(s.id))
	return ok && state != infrastructuremanager.StateReady
}

// changed wakes the operation waiting on runtimeID, if one does.
func (w *Watcher) changed(ctx context.Context, runtimeID string) {
	if runtimeID == "" {
		return
	}
	jobID, wokenAt, err := w.jobs.WakeRuntime(ctx, runtimeID)
	if errors.Is(err, storage.ErrNotFound) {
		return
	}
	if err != nil {
		w.logWakeError(ctx, runtimeID, err)
		return
	}
	go w.wake(ctx, runtimeID, jobID, wokenAt)
}

// wake makes the operation's job due now. A job already running is left
// alone by the queue; if that run began after the wake-up was recorded, it
// reads what changed and nothing is lost. A run that began before may have
// read the old state; if it ends in a wait, it sees the wake-up when it saves
// (Engine.wait), unless the wake-up came after that save. So while such a run
// is going, the wake-up is tried again (backing off from 200 ms to 2 s) until
// the queue has recorded the run's end, which on a busy machine is seconds
// later; at most MaxRun, after which the run was cut off and is retried
// anyway.
func (w *Watcher) wake(ctx context.Context, runtimeID string, jobID int64, wokenAt time.Time) {
	deadline := time.Now().Add(w.MaxRun)
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		runningSince, err := w.queue.Wake(ctx, jobID)
		if err != nil {
			w.logWakeError(ctx, runtimeID, err)
			return
		}
		if runningSince.IsZero() || runningSince.After(wokenAt) {
			return
		}
		if time.Now().Add(delay).After(deadline) {
			w.log.WithFields(logrus.Fields{"runtime_id": runtimeID, "job_id": jobID}).
				Warn("operation still running a step begun before its runtime changed; leaving it to its next poll")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// logWakeError reports a wake-up that could not be made: the operation then
// waits for its next poll. Errors from shutting down are not worth a line.
func (w *Watcher) logWakeError(ctx context.Context, runtimeID string, err error) {
	if ctx.Err() != nil {
		return
	}
	w.log.WithError(err).WithField("runtime_id", runtimeID).Warn("waking operation; it waits for its next poll")
}
