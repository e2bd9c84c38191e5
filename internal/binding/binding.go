// Package binding holds keb's OSB service bindings: a binding is a
// ServiceAccount in the instance's runtime, bound to a ClusterRole, whose
// short-lived token (TokenRequest API) is handed out as a kubeconfig. The
// binding's row is written before the runtime is touched and completed
// after; the kubeconfig is stored sealed. Expired bindings are removed from
// the runtime by a periodic job, and a deprovisioning removes them all.
package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// Config are the binding rules.
type Config struct {
	// BindablePlanIDs are the plans whose instances can be bound.
	BindablePlanIDs []string
	MaxPerInstance  int
	// DefaultExpiration applies when a PUT names no expiration_seconds;
	// MinExpiration and MaxExpiration bound the ones it names.
	DefaultExpiration time.Duration
	MinExpiration     time.Duration
	MaxExpiration     time.Duration
	// Role is the ClusterRole the ServiceAccount is bound to.
	Role string
	// Timeout bounds a synchronous bind's work in the runtime,
	// AsyncTimeout an asynchronous one's (with retries).
	Timeout      time.Duration
	AsyncTimeout time.Duration
}

// Store is the part of storage.Store bindings use.
type Store interface {
	PutBinding(ctx context.Context, instanceID, bindingID string, now time.Time,
		decide func(inst storage.Instance, existing *storage.Binding, live int) (*storage.Binding, error)) error
	CompleteBinding(ctx context.Context, bindingID, operationID string, kubeconfig []byte, expiresAt time.Time) (bool, error)
	FailBinding(ctx context.Context, bindingID, operationID, description string) error
	Binding(ctx context.Context, bindingID string) (storage.Binding, error)
	DeleteBinding(ctx context.Context, bindingID, operationID string) (bool, error)
	InstanceBindings(ctx context.Context, instanceID string) ([]storage.Binding, error)
	DueBindings(ctx context.Context, now time.Time, limit int) ([]storage.Binding, error)
}

// Runtimes gives clients for runtimes and where their API servers are;
// *runtimeclient.Cache is one.
type Runtimes interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
	Endpoint(ctx context.Context, runtimeID string) (runtimeclient.Endpoint, error)
}

// Service creates, hands out and removes bindings.
type Service struct {
	store    Store
	runtimes Runtimes
	cfg      Config
	bindable map[string]bool
	log      logrus.FieldLogger
	// Now is the clock (tests move it to expire bindings).
	Now func() time.Time

	// background carries asynchronous binds; Close cancels and waits for them.
	background context.Context
	stop       context.CancelFunc
	running    sync.WaitGroup
}

// New returns the binding service.
func New(store Store, runtimes Runtimes, cfg Config, log logrus.FieldLogger) *Service {
	bindable := map[string]bool{}
	for _, id := range cfg.BindablePlanIDs {
		bindable[id] = true
	}
	bg, stop := context.WithCancel(context.Background())
	return &Service{store: store, runtimes: runtimes, cfg: cfg, bindable: bindable, log: log, Now: time.Now,
		background: bg, stop: stop}
}

// Close cancels asynchronous binds still running and waits for them; their
// rows stay in progress until the prune job fails them at their deadline.
func (s *Service) Close() {
	s.stop()
	s.running.Wait()
}

// Request is a PUT of a binding.
type Request struct {
	InstanceID string
	BindingID  string
	PlanID     string
	// Parameters are the request's parameters as sent (nil when absent).
	Parameters json.RawMessage
	// Async is OSB's accepts_incomplete: the bind is answered at once and
	// finished in the background.
	Async bool
}

// Credentials are what a finished binding hands out.
type Credentials struct {
	Kubeconfig string
	ExpiresAt  time.Time
}

// Result is the answer to a PUT.
type Result struct {
	Credentials
	// AlreadyExists: an identical binding existed (OSB 200).
	AlreadyExists bool
	// Async: the bind goes on in the background under OperationID (OSB 202).
	Async       bool
	OperationID string
}

// Bind creates the binding (or finds the identical one). Refusals are
// *Error values.
func (s *Service) Bind(ctx context.Context, req Request) (Result, error) {
	exp, err := s.expiration(req.Parameters)
	if err != nil {
		return Result{}, err
	}
	var created storage.Binding
	var existing *storage.Binding
	for attempt := 0; ; attempt++ {
		var stale *storage.Binding
		created, existing, stale, err = s.put(ctx, req, exp)
		if stale == nil || attempt == 2 {
			break
		}
		// A failed or expired binding under this ID: its objects go from the
		// runtime (its token stops working) and its row from the database
		// before the new bind, which gets objects of its own.
		if err := s.removeFromRuntime(ctx, *stale); err != nil {
			s.log.WithFields(logrus.Fields{"instance_id": req.InstanceID, "binding_id": req.BindingID}).WithError(err).
				Warn("binding: removing the expired binding from the runtime failed")
			return Result{}, refuse(KindUnavailable, "the runtime's API server did not remove the expired binding %s; nothing was bound: retry", req.BindingID)
		}
		if _, err := s.store.DeleteBinding(ctx, stale.BindingID, stale.OperationID); err != nil {
			return Result{}, err
		}
	}
	switch {
	case errors.Is(err, errStale):
		return Result{}, refuse(KindConcurrent, "binding %s keeps changing; retry", req.BindingID)
	case errors.Is(err, storage.ErrNotFound):
		return Result{}, refuse(KindInstanceNotFound, "instance %s does not exist", req.InstanceID)
	case errors.Is(err, storage.ErrAlreadyExists):
		return Result{}, refuse(KindConflict, "binding %s already exists with different attributes: the binding ID belongs to another instance", req.BindingID)
	case err != nil:
		return Result{}, err
	}
	if existing != nil {
		return s.answerExisting(ctx, *existing, req.Async)
	}
	log := s.log.WithFields(logrus.Fields{"instance_id": req.InstanceID, "binding_id": req.BindingID, "operation_id": created.OperationID})
	if req.Async {
		s.running.Go(func() {
			ctx, cancel := context.WithTimeout(s.background, s.cfg.AsyncTimeout)
			defer cancel()
			s.finishAsync(ctx, created, exp, log)
		})
		return Result{Async: true, OperationID: created.OperationID}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	creds, err := s.create(rctx, created, exp)
	if err != nil {
		s.abandon(ctx, created, log)
		if s.unbound(ctx, created) {
			// An unbind took the row first and removed what the bind had made.
			return Result{}, errUnboundWhileCreated(created.BindingID)
		}
		log.WithError(err).Warn("binding: creating the ServiceAccount in the runtime failed")
		return Result{}, refuse(KindUnavailable, "the runtime's API server did not complete the binding within %s; nothing was bound: retry, or bind with accepts_incomplete=true",
			s.cfg.Timeout)
	}
	ok, err := untilAvailable(ctx, func() (bool, error) {
		return s.store.CompleteBinding(ctx, created.BindingID, created.OperationID, []byte(creds.Kubeconfig), creds.ExpiresAt)
	})
	if err != nil || !ok {
		// Unbound or deprovisioned meanwhile: what was created must go.
		s.abandon(ctx, created, log)
		if err != nil {
			return Result{}, err
		}
		return Result{}, errUnboundWhileCreated(created.BindingID)
	}
	log.WithField("expires_at", creds.ExpiresAt).Info("binding created")
	return Result{Credentials: creds, OperationID: created.OperationID}, nil
}

// errUnboundWhileCreated answers a bind whose row an unbind (or the instance's deprovisioning)
// removed while the bind was at work in the runtime: the unbind won, and the bind removed what
// it had made.
func errUnboundWhileCreated(bindingID string) error {
	return refuse(KindConflict, "binding %s was unbound while it was being created (an unbind, or the instance's deprovisioning, removed it); nothing is bound: bind again if it is still wanted", bindingID)
}

// unbound reports whether b's row is gone or belongs to another bind now: an unbind (or a
// deprovisioning) removed it while b was at work. A read that fails reports false.
func (s *Service) unbound(ctx context.Context, b storage.Binding) bool {
	cur, err := s.store.Binding(context.WithoutCancel(ctx), b.BindingID)
	return errors.Is(err, storage.ErrNotFound) || (err == nil && cur.OperationID != b.OperationID)
}

// errStale stops PutBinding when the binding ID holds a failed or expired
// binding, which Bind removes first.
var errStale = errors.New("binding to replace")

// put decides on a PUT in one transaction: the binding it wrote (in
// progress), or the identical one that exists, or the stale one to remove
// first (with errStale), or a refusal.
func (s *Service) put(ctx context.Context, req Request, exp time.Duration) (created storage.Binding, existing, stale *storage.Binding, err error) {
	now := s.Now()
	// One operation ID for every run of the transaction: a run after a
	// lost connection tells the row an earlier run committed by it.
	opID := uuid.NewString()
	err = s.store.PutBinding(ctx, req.InstanceID, req.BindingID, now,
		func(inst storage.Instance, old *storage.Binding, live int) (*storage.Binding, error) {
			created, existing, stale = storage.Binding{}, nil, nil
			if req.PlanID != inst.PlanID {
				return nil, refuse(KindInvalid, "plan_id %s is not the instance's plan (%s, %s)", req.PlanID, inst.PlanName, inst.PlanID)
			}
			if old != nil && old.OperationID == opID {
				created = *old
				return nil, nil
			}
			if old != nil {
				if why := differs(old, req); why != "" {
					return nil, refuse(KindConflict, "binding %s already exists with different attributes: %s", req.BindingID, why)
				}
				// A bind in progress past its deadline was abandoned (its
				// request ended, its replica died, or the database went away
				// before it could be completed or removed): it is replaced,
				// as the prune job would fail it.
				abandoned := old.State == storage.BindingInProgress && !old.Deadline.After(now)
				if !abandoned && (old.State == storage.BindingInProgress || old.Live(now)) {
					existing = old
					return nil, nil
				}
				stale = old
				return nil, errStale
			}
			if !s.bindable[inst.PlanID] {
				return nil, refuse(KindInvalid, "instances of plan %s cannot be bound", inst.PlanName)
			}
			if reason := unbindable(inst); reason != "" {
				return nil, refuse(KindNotBindable, "%s", reason)
			}
			if live >= s.cfg.MaxPerInstance {
				return nil, refuse(KindLimit, "the instance has %d live bindings, the most allowed (APP_BROKER_BINDING_MAX_PER_INSTANCE=%d); unbind one or wait until one expires",
					live, s.cfg.MaxPerInstance)
			}
			timeout := s.cfg.Timeout
			if req.Async {
				timeout = s.cfg.AsyncTimeout
			}
			created = storage.Binding{
				BindingID: req.BindingID, InstanceID: inst.InstanceID, RuntimeID: inst.RuntimeID, PlanID: req.PlanID,
				Parameters: parametersOrEmpty(req.Parameters), State: storage.BindingInProgress,
				Description: "creating the ServiceAccount and its token in the runtime", OperationID: opID,
				ServiceAccount: serviceAccountName(req.BindingID, opID), ExpiresAt: now.Add(exp),
				Deadline: now.Add(timeout),
			}
			return &created, nil
		})
	return created, existing, stale, err
}

// answerExisting answers a PUT identical to a stored binding: the binding
// itself once done, its operation while in progress.
func (s *Service) answerExisting(ctx context.Context, b storage.Binding, async bool) (Result, error) {
	if b.State == storage.BindingInProgress {
		if !async {
			return Result{}, refuse(KindConcurrent, "binding %s is being created; poll its last_operation", b.BindingID)
		}
		return Result{Async: true, OperationID: b.OperationID}, nil
	}
	full, err := s.store.Binding(ctx, b.BindingID)
	if err != nil {
		return Result{}, fmt.Errorf("reading binding %s: %w", b.BindingID, err)
	}
	return Result{AlreadyExists: true, OperationID: full.OperationID,
		Credentials: Credentials{Kubeconfig: string(full.Kubeconfig), ExpiresAt: full.ExpiresAt}}, nil
}

// finishAsync does an asynchronous bind's work, retrying while the runtime
// is unreachable until ctx's deadline, and records the outcome.
func (s *Service) finishAsync(ctx context.Context, b storage.Binding, exp time.Duration, log logrus.FieldLogger) {
	backoff := time.Second
	for {
		creds, err := s.create(ctx, b, exp)
		if err == nil {
			ok, err := s.store.CompleteBinding(ctx, b.BindingID, b.OperationID, []byte(creds.Kubeconfig), creds.ExpiresAt)
			switch {
			case err != nil:
				log.WithError(err).Error("binding: recording the finished binding failed")
				s.failAsync(b, "recording the binding failed; unbind it and bind again", log)
			case !ok:
				s.abandon(ctx, b, log)
			default:
				log.WithField("expires_at", creds.ExpiresAt).Info("binding created")
			}
			return
		}
		if s.unbound(ctx, b) {
			s.abandon(ctx, b, log)
			log.Info("binding: unbound while it was being created")
			return
		}
		log.WithError(err).Warn("binding: creating the ServiceAccount in the runtime failed; retrying")
		select {
		case <-ctx.Done():
			s.failAsync(b, fmt.Sprintf("the runtime's API server did not complete the binding within %s", s.cfg.AsyncTimeout), log)
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 15*time.Second)
	}
}

// failAsync records an asynchronous bind's failure for last_operation and
// removes what it may have created in the runtime.
func (s *Service) failAsync(b storage.Binding, description string, log logrus.FieldLogger) {
	ctx, cancel := context.WithTimeout(context.Background(), runtimeclient.RequestTimeout)
	defer cancel()
	if err := s.removeFromRuntime(ctx, b); err != nil {
		log.WithError(err).Warn("binding: removing a failed binding from the runtime failed; the prune job tries again")
	}
	if err := s.store.FailBinding(ctx, b.BindingID, b.OperationID, description); err != nil {
		log.WithError(err).Error("binding: recording the failure failed")
	}
}

// abandon removes a bind that did not finish: its objects in the runtime
// and its row, so that it neither lingers nor counts against the limit.
func (s *Service) abandon(ctx context.Context, b storage.Binding, log logrus.FieldLogger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runtimeclient.RequestTimeout)
	defer cancel()
	if err := s.removeFromRuntime(ctx, b); err != nil {
		// The row stays in progress: the prune job fails it at its deadline
		// and tries the removal again.
		log.WithError(err).Warn("binding: removing an unfinished binding from the runtime failed; the prune job tries again")
		return
	}
	if _, err := untilAvailable(ctx, func() (bool, error) { return s.store.DeleteBinding(ctx, b.BindingID, b.OperationID) }); err != nil {
		log.WithError(err).Error("binding: deleting an unfinished binding failed")
	}
}

// untilAvailable runs fn, an idempotent write, until the database answers
// or ctx ends: a bind whose runtime work is done waits out a database
// failover (seconds) within its request rather than throwing that work
// away and leaving its row in progress until its deadline.
func untilAvailable(ctx context.Context, fn func() (bool, error)) (bool, error) {
	for {
		ok, err := fn()
		if !storage.Unavailable(err) || ctx.Err() != nil {
			return ok, err
		}
		select {
		case <-ctx.Done():
			return ok, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Get returns a finished, unexpired binding's credentials and parameters.
func (s *Service) Get(ctx context.Context, instanceID, bindingID string) (Credentials, json.RawMessage, error) {
	b, err := s.store.Binding(ctx, bindingID)
	switch {
	case errors.Is(err, storage.ErrNotFound) || (err == nil && b.InstanceID != instanceID):
		return Credentials{}, nil, refuse(KindNotFound, "binding %s of instance %s does not exist", bindingID, instanceID)
	case err != nil:
		return Credentials{}, nil, err
	}
	switch {
	case b.State == storage.BindingInProgress:
		return Credentials{}, nil, refuse(KindNotFound, "binding %s is being created; poll its last_operation", bindingID)
	case b.State == storage.BindingFailed:
		return Credentials{}, nil, refuse(KindNotFound, "binding %s failed: %s", bindingID, b.Description)
	case !b.ExpiresAt.After(s.Now()):
		return Credentials{}, nil, refuse(KindNotFound, "binding %s expired at %s", bindingID, b.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return Credentials{Kubeconfig: string(b.Kubeconfig), ExpiresAt: b.ExpiresAt}, b.Parameters, nil
}

// LastOperation returns the state of a bind (OSB's words) and its description.
func (s *Service) LastOperation(ctx context.Context, instanceID, bindingID, operationID string) (storage.BindingState, string, error) {
	b, err := s.store.Binding(ctx, bindingID)
	switch {
	case errors.Is(err, storage.ErrNotFound) || (err == nil && b.InstanceID != instanceID):
		return "", "", refuse(KindNotFound, "binding %s of instance %s does not exist", bindingID, instanceID)
	case err != nil:
		return "", "", err
	case operationID != "" && operationID != b.OperationID:
		return "", "", refuse(KindNotFound, "operation %s is not binding %s's", operationID, bindingID)
	}
	return b.State, b.Description, nil
}

// Unbind removes a binding: of a finished one (or an abandoned bind) the
// objects in the runtime first (its token stops working at once), then its
// row; of a bind still at work the row first, in one statement, so that the
// bind learns it lost (it finds no row to complete, removes what it made and
// answers 409), then what the runtime holds so far. Only the unbind whose
// delete removed the row answers done: an unknown binding, or one a
// concurrent unbind removed, is KindGone (OSB 410).
func (s *Service) Unbind(ctx context.Context, instanceID, bindingID string) error {
	b, err := s.store.Binding(ctx, bindingID)
	switch {
	case errors.Is(err, storage.ErrNotFound) || (err == nil && b.InstanceID != instanceID):
		return errUnknownBinding(instanceID, bindingID)
	case err != nil:
		return err
	}
	log := s.log.WithFields(logrus.Fields{"instance_id": instanceID, "binding_id": bindingID})
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if b.State == storage.BindingInProgress && b.Deadline.After(s.Now()) {
		deleted, err := s.store.DeleteBinding(ctx, b.BindingID, b.OperationID)
		if err != nil {
			return err
		}
		if !deleted {
			return errUnknownBinding(instanceID, bindingID)
		}
		// The bind removes what it makes after this (abandon).
		if err := s.removeFromRuntime(rctx, b); err != nil {
			log.WithError(err).Warn("binding: removing a bind in progress from the runtime failed; the bind removes what it made")
		}
		log.Info("binding removed while it was being created")
		return nil
	}
	if err := s.removeFromRuntime(rctx, b); err != nil {
		log.WithError(err).Warn("binding: removing the ServiceAccount from the runtime failed")
		return refuse(KindUnavailable, "the runtime's API server did not remove the binding within %s; it stays: retry", s.cfg.Timeout)
	}
	deleted, err := s.store.DeleteBinding(ctx, b.BindingID, b.OperationID)
	if err != nil {
		return err
	}
	if !deleted {
		// A concurrent unbind removed it first.
		return errUnknownBinding(instanceID, bindingID)
	}
	log.Info("binding removed")
	return nil
}

// errUnknownBinding answers an unbind of a binding that does not exist (any more).
func errUnknownBinding(instanceID, bindingID string) error {
	return refuse(KindGone, "binding %s of instance %s does not exist", bindingID, instanceID)
}

// RemoveAll removes every binding of an instance, from its runtime and from
// the database: the deprovisioning does it before the runtime goes.
func (s *Service) RemoveAll(ctx context.Context, instanceID string) (int, error) {
	bs, err := s.store.InstanceBindings(ctx, instanceID)
	if err != nil {
		return 0, err
	}
	for _, b := range bs {
		if err := s.removeFromRuntime(ctx, b); err != nil {
			return 0, fmt.Errorf("removing binding %s from runtime %s: %w", b.BindingID, b.RuntimeID, err)
		}
		if _, err := s.store.DeleteBinding(ctx, b.BindingID, b.OperationID); err != nil {
			return 0, err
		}
	}
	return len(bs), nil
}

// differs says how a PUT differs from the stored binding of that ID, or ""
// when it is identical (OSB: absent parameters equal {}).
func differs(old *storage.Binding, req Request) string {
	if old.InstanceID != req.InstanceID {
		return "the binding ID belongs to another instance"
	}
	if old.PlanID != req.PlanID {
		return fmt.Sprintf("plan_id %s, not %s", req.PlanID, old.PlanID)
	}
	var a, b any
	if json.Unmarshal(parametersOrEmpty(old.Parameters), &a) != nil || json.Unmarshal(parametersOrEmpty(req.Parameters), &b) != nil ||
		!reflect.DeepEqual(a, b) {
		return "different parameters"
	}
	return ""
}

// unbindable says why an instance cannot be bound now, or "".
func unbindable(inst storage.Instance) string {
	switch inst.State {
	case storage.RuntimeSucceeded:
		if inst.RuntimeID == "" {
			return "the instance has no runtime to bind to"
		}
		return ""
	case storage.RuntimeProvisioning:
		return "the instance is being provisioned; bind once provisioning succeeded"
	case storage.RuntimeFailed:
		return "the instance's provisioning failed: it has no runtime to bind to"
	case storage.RuntimeDeprovisioning:
		return "the instance is being deprovisioned"
	case storage.RuntimeSuspended:
		return "the instance is suspended: its runtime is gone; resume it (context.active: true) to bind"
	}
	return fmt.Sprintf("the instance is %s", inst.State)
}

func parametersOrEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage("{}")
	}
	return p
}
