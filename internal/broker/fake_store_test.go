package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/storage"
)

// fakeStore is the broker's instanceStore with one function per method; a
// method without one fails the call, so a test states every store call it
// expects.
type fakeStore struct {
	createProvisioning   func(inst storage.Instance, op storage.Operation) error
	createDeprovisioning func(op storage.Operation) (storage.Operation, bool, error)
	instance             func(instanceID string) (storage.Instance, error)
	lastOperation        func(instanceID string) (storage.Operation, error)
	operation            func(instanceID, operationID string) (storage.Operation, error)
	archived             func(instanceID string) (storage.ArchivedInstance, error)
	// changeInstance is called with ChangeInstance's decide function, as the
	// store would call it inside its transaction.
	changeInstance func(instanceID string, decide func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error

	mu    sync.Mutex
	calls []string
}

var _ instanceStore = (*fakeStore)(nil)

func (f *fakeStore) record(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

func (f *fakeStore) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func unexpected(name string) error { return fmt.Errorf("fake store: unexpected call to %s", name) }

func (f *fakeStore) CreateProvisioning(_ context.Context, inst storage.Instance, op storage.Operation) error {
	f.record("CreateProvisioning")
	if f.createProvisioning == nil {
		return unexpected("CreateProvisioning")
	}
	return f.createProvisioning(inst, op)
}

func (f *fakeStore) CreateDeprovisioning(_ context.Context, op storage.Operation) (storage.Operation, bool, error) {
	f.record("CreateDeprovisioning")
	if f.createDeprovisioning == nil {
		return storage.Operation{}, false, unexpected("CreateDeprovisioning")
	}
	return f.createDeprovisioning(op)
}

func (f *fakeStore) Instance(_ context.Context, instanceID string) (storage.Instance, error) {
	f.record("Instance")
	if f.instance == nil {
		return storage.Instance{}, unexpected("Instance")
	}
	return f.instance(instanceID)
}

func (f *fakeStore) LastOperation(_ context.Context, instanceID string) (storage.Operation, error) {
	f.record("LastOperation")
	if f.lastOperation == nil {
		return storage.Operation{}, unexpected("LastOperation")
	}
	return f.lastOperation(instanceID)
}

func (f *fakeStore) Operation(_ context.Context, instanceID, operationID string) (storage.Operation, error) {
	f.record("Operation")
	if f.operation == nil {
		return storage.Operation{}, unexpected("Operation")
	}
	return f.operation(instanceID, operationID)
}

// PollOperation answers from the instance and operation fakes, as the real
// store's one statement does from the instance and operation rows.
func (f *fakeStore) PollOperation(ctx context.Context, instanceID, operationID string) (storage.OperationPoll, error) {
	_, err := f.Instance(ctx, instanceID)
	if err != nil {
		return storage.OperationPoll{}, err
	}
	var op storage.Operation
	if operationID == "" {
		op, err = f.LastOperation(ctx, instanceID)
	} else {
		op, err = f.Operation(ctx, instanceID, operationID)
	}
	var poll storage.OperationPoll
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return poll, nil
	case err != nil:
		return storage.OperationPoll{}, err
	}
	poll.Found, poll.Type, poll.State, poll.Description = true, op.Type, op.State, op.Description
	return poll, nil
}

// loadCatalog loads the embedded catalog once; it is immutable.
var loadCatalog = sync.OnceValues(func() (*catalog.Catalog, error) { return catalog.Load("") })

const (
	testRetryAfter = 7 * time.Second
	testTimeout    = 3 * time.Hour
	// secretDetail stands for driver text that must never reach a client.
	secretDetail = "SECRET-DETAIL"
)

var errDriver = errors.New("pq: connection refused " + secretDetail + " host=db.internal user=keb")

func newTestBroker(t *testing.T, store *fakeStore) (*Broker, *logtest.Hook) {
	t.Helper()
	cat, err := loadCatalog()
	if err != nil {
		t.Fatalf("loading catalog: %v", err)
	}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	b, err := New(cat, store, Options{
		DefaultRequestRegion: "cf-eu10",
		EnabledPlans:         catalog.DefaultEnabledPlans(),
		OperationTimeout:     testTimeout,
		RetryAfter:           testRetryAfter,
	}, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b, hook
}

// failure unpacks a brokerapi FailureResponse as the HTTP layer would.
type failure struct {
	status      int
	key         string
	description string
	empty       bool
}

func asFailure(t *testing.T, err error) failure {
	t.Helper()
	var fr *apiresponses.FailureResponse
	if !errors.As(err, &fr) {
		t.Fatalf("error %v (%T) is not a brokerapi FailureResponse: the HTTP layer would answer a generic 500", err, err)
	}
	out := failure{status: fr.ValidatedStatusCode(nil)}
	switch body := fr.ErrorResponse().(type) {
	case apiresponses.ErrorResponse:
		out.key, out.description = body.Error, body.Description
	case apiresponses.EmptyResponse:
		out.empty = true
	default:
		t.Fatalf("unexpected error body %T", body)
	}
	return out
}

func (f *fakeStore) Archived(_ context.Context, instanceID string) (storage.ArchivedInstance, error) {
	f.record("Archived")
	if f.archived == nil {
		return storage.ArchivedInstance{}, storage.ErrNotFound
	}
	return f.archived(instanceID)
}

func (f *fakeStore) ChangeInstance(_ context.Context, instanceID string, decide func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error {
	f.record("ChangeInstance")
	if f.changeInstance == nil {
		return unexpected("ChangeInstance")
	}
	return f.changeInstance(instanceID, decide)
}
