package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/controlplane"
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
	// seen is the running watch's cache once it has synced; nil otherwise.
	seen cache.Cache
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

// Seen fills obj (a Runtime CR, or a Secret's metav1.PartialObjectMetadata)
// with what the running watch has seen under key, and reports whether it has
// seen it: false while no watch runs or before the object's event arrived.
// It may lag the API server by moments, but never goes back: an object is in
// it before the event that wakes its operation is handled. So a step may
// trust it for a state it waits for and read the API server otherwise.
func (w *Watcher) Seen(ctx context.Context, key client.ObjectKey, obj client.Object) bool {
	w.mu.Lock()
	c := w.seen
	w.mu.Unlock()
	return c != nil && c.Get(ctx, key, obj) == nil
}

// SeenList lists into list what the running watch has seen of its kind
// (Runtime CRs, Kyma CRs), and reports whether a watch runs: false while none
// does. A watch lists everything when it starts, so an object that existed
// then is in it.
func (w *Watcher) SeenList(ctx context.Context, list client.ObjectList, opts ...client.ListOption) bool {
	w.mu.Lock()
	c := w.seen
	w.mu.Unlock()
	return c != nil && c.List(ctx, list, opts...) == nil
}

func (w *Watcher) setSeen(c cache.Cache) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = c
}

// NewWatcher watches namespace of the control plane at cfg.
func NewWatcher(cfg *rest.Config, scheme *k8sruntime.Scheme, namespace string, jobs waitingJobs, queue waker, log logrus.FieldLogger) *Watcher {
	return &Watcher{cfg: cfg, scheme: scheme, namespace: namespace, jobs: jobs, queue: queue, log: log,
		MaxRun: time.Minute}
}

// Start watches until ctx is done or the watch fails; Run restarts it.
func (w *Watcher) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := cache.New(w.cfg, watchCacheOptions(w.scheme, w.namespace))
	if err != nil {
		return fmt.Errorf("creating control-plane watch: %w", err)
	}
	// Secrets are watched as metadata only: the watcher needs their names,
	// never their kubeconfigs.
	secrets := kubeconfigSecrets()
	for _, obj := range []client.Object{&infrastructuremanager.Runtime{}, secrets} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if endsAWait(nil, o) && !awaitsReady(ctx, c, o) {
					w.changed(ctx, o)
				}
			},
			UpdateFunc: func(old, o any) {
				if endsAWait(old, o) {
					w.changed(ctx, o)
				}
			},
			DeleteFunc: func(o any) { w.changed(ctx, o) },
		}); err != nil {
			return fmt.Errorf("handling %T events: %w", obj, err)
		}
	}
	if err := w.watchKymas(ctx, c); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		if err := <-errc; err != nil {
			return fmt.Errorf("starting control-plane watch: %w", err)
		}
		return errors.New("control-plane watch never synced")
	}
	w.setState(true, nil)
	w.setSeen(c)
	defer w.setSeen(nil)
	return <-errc
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
	case *infrastructuremanager.Runtime:
		state := obj.Status.State
		if state != infrastructuremanager.StateReady && state != infrastructuremanager.StateFailed {
			return false
		}
		prev, ok := old.(*infrastructuremanager.Runtime)
		if !ok || prev.Status.State != state {
			return true
		}
		// Ready after Ready: a change applied without leaving Ready shows
		// as a condition's transition.
		return state == infrastructuremanager.StateReady &&
			infrastructuremanager.Fingerprint(prev.Status.Conditions) != infrastructuremanager.Fingerprint(obj.Status.Conditions)
	case *metav1.PartialObjectMetadata:
		return old == nil && obj.GetName() == infrastructuremanager.KubeconfigSecretName(obj.GetLabels()[controlplane.LabelRuntimeID])
	default:
		return false
	}
}

// awaitsReady reports whether o is a kubeconfig Secret whose Runtime CR the
// watch shows short of Ready. Its arrival then ends no wait: check_runtime,
// the one step waiting for the Secret, waits for Ready first, and the Ready
// event wakes it (the infrastructure manager writes the Secret before it
// reports Ready). Waking it for the Secret would run the step only to wait
// again: a wake-up, a run and an API server read per provisioning. A Runtime
// CR the watch has not seen wakes, as before.
func awaitsReady(ctx context.Context, seen client.Reader, o any) bool {
	secret, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return false
	}
	rt := &infrastructuremanager.Runtime{}
	key := client.ObjectKey{Namespace: secret.GetNamespace(), Name: kyma.Name(secret.GetLabels()[controlplane.LabelRuntimeID])}
	return seen.Get(ctx, key, rt) == nil && rt.Status.State != infrastructuremanager.StateReady
}

func (w *Watcher) changed(ctx context.Context, o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	runtimeID := obj.GetLabels()[controlplane.LabelRuntimeID]
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
