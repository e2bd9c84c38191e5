package deprovisioning_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// env is the package's kube-apiserver with keb's CRDs; each test uses a namespace of its own.
var env *k8stest.Environment

// TestMain also serves a PostgreSQL server (pgtest) for the tests that run
// steps with the engine on a real store.
func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

var kcp = sync.OnceValues(func() (client.Client, error) {
	s, err := app.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(env.Config, client.Options{Scheme: s})
})

func kcpClient(t *testing.T) client.Client {
	t.Helper()
	c, err := kcp()
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	return c
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := "deprov-" + uuid.NewString()[:8]
	if err := kcpClient(t).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	return ns
}

func testConfig(ns string) deprovisioning.Config {
	return deprovisioning.Config{Namespace: ns, RemovalTimeout: time.Hour, RemovalPoll: 15 * time.Second}
}

// newOp returns a deprovisioning operation of a provisioned azure instance.
func newOp() *process.Operation {
	instanceID := uuid.NewString()
	created := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	return &process.Operation{
		Operation: storage.Operation{
			ID:         uuid.NewString(),
			InstanceID: instanceID,
			Type:       storage.OperationTypeDeprovision,
			State:      storage.StateInProgress,
			CreatedAt:  created.Add(48 * time.Hour),
		},
		Instance: storage.Instance{
			InstanceID:      instanceID,
			RuntimeID:       uuid.NewString(),
			GlobalAccountID: "ga-" + uuid.NewString()[:8],
			SubAccountID:    "sa-" + uuid.NewString()[:8],
			UserID:          "jane.doe@example.com",
			ServiceID:       catalog.ServiceID,
			PlanID:          catalog.AzurePlanID,
			PlanName:        "azure",
			PlatformRegion:  "cf-eu20",
			Provider:        "azure",
			ProviderRegion:  "westeurope",
			CreatedAt:       created,
		},
	}
}

type outcome int

const (
	done outcome = iota
	retry
	failure
	temporary
)

func (o outcome) String() string {
	return [...]string{"done", "retry", "failure", "temporary error"}[o]
}

func outcomeOf(res process.StepResult, err error) outcome {
	switch {
	case err != nil:
		return temporary
	case res.Failure != nil:
		return failure
	case res.RetryAfter > 0:
		return retry
	default:
		return done
	}
}

func mustOutcome(t *testing.T, what string, want outcome, res process.StepResult, err error) {
	t.Helper()
	if got := outcomeOf(res, err); got != want {
		t.Fatalf("%s: outcome %s (result %+v, error %v), want %s", what, got, res, err, want)
	}
}

// fakeStore is an in-memory Store: the provisioning LastOperationOfType returns, the tenant
// count, instances archived and removed (ArchiveAndRemove) and instances removed
// (RemoveInstance), each call recorded.
type fakeStore struct {
	mu sync.Mutex

	provisioning storage.Operation
	provErr      error // e.g. storage.ErrNotFound
	opTypesAsked []string

	others       int
	countErr     error
	countedCalls [][3]string // global account, provider, except instance

	archiveErr   error
	archiveCalls int
	archived     []storage.ArchivedInstance // archived and removed

	removeErr error
	removed   []string
}

func (s *fakeStore) LastOperationOfType(_ context.Context, instanceID, opType string) (storage.Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opTypesAsked = append(s.opTypesAsked, opType)
	if s.provErr != nil {
		return storage.Operation{}, s.provErr
	}
	if opType != storage.OperationTypeProvision || s.provisioning.InstanceID != instanceID {
		return storage.Operation{}, storage.ErrNotFound
	}
	return s.provisioning, nil
}

func (s *fakeStore) OtherInstancesOfTenant(_ context.Context, globalAccountID, provider, exceptInstanceID string, _ []string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countedCalls = append(s.countedCalls, [3]string{globalAccountID, provider, exceptInstanceID})
	return s.others, s.countErr
}

// ArchiveAndRemove records the archive row; removing the instance is part of
// the same call, so the fake keeps no separate record of it (removed is
// RemoveInstance's).
func (s *fakeStore) ArchiveAndRemove(_ context.Context, a storage.ArchivedInstance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.archiveCalls++
	if s.archiveErr != nil {
		return s.archiveErr
	}
	s.archived = append(s.archived, a)
	return nil
}

func (s *fakeStore) RemoveInstance(_ context.Context, instanceID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removed = append(s.removed, instanceID)
	return s.removeErr
}

// The fake must satisfy the pipeline's Store.
var _ deprovisioning.Store = (*fakeStore)(nil)
