package deprovisioning_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// env is the package's kube-apiserver with keb's CRDs; each test uses a namespace of its own.
var env *k8stest.Environment

// TestMain also serves a PostgreSQL server (pgtest) for the tests that run
// steps with the engine on a real store.
func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

func kcpClient(t *testing.T) client.Client { return processtest.Client(t, env.Config) }

func newNamespace(t *testing.T) string { return processtest.Namespace(t, kcpClient(t), "deprov") }

func testConfig(ns string) deprovisioning.Config {
	return deprovisioning.Config{Namespace: ns, RemovalTimeout: time.Hour, RemovalPoll: 15 * time.Second}
}

// newOp returns a deprovisioning operation of a provisioned azure instance.
func newOp(t *testing.T) *process.Operation {
	t.Helper()
	created := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	inst := processtest.Instance(t, catalog.AzurePlanID)
	inst.RuntimeID = uuid.NewString()
	inst.PlatformRegion = "cf-eu20"
	inst.Provider = "azure"
	inst.ProviderRegion = "westeurope"
	inst.CreatedAt = created
	op := processtest.Operation(storage.OperationTypeDeprovision, inst)
	op.CreatedAt = created.Add(48 * time.Hour)
	return op
}

// fakeStore is an in-memory Store: the provisioning LastOperationOfType returns, the tenant
// count and instances archived and removed (ArchiveAndRemove), each call recorded.
type fakeStore struct {
	mu sync.Mutex

	provisioning storage.Operation
	provErr      error // e.g. storage.ErrNotFound
	opTypesAsked []storage.OperationType

	others       int
	countErr     error
	countedCalls [][3]string // global account, provider, except instance

	archiveErr   error
	archiveCalls int
	archived     []storage.ArchivedInstance // archived and removed
}

func (s *fakeStore) LastOperationOfType(_ context.Context, instanceID string, opType storage.OperationType) (storage.Operation, error) {
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

func (s *fakeStore) OtherInstancesOnAccount(_ context.Context, binding, exceptInstanceID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.countedCalls = append(s.countedCalls, [3]string{"account", binding, exceptInstanceID})
	return s.others, s.countErr
}

// LockAccounts runs fn with the fake as its transaction.
func (s *fakeStore) LockAccounts(ctx context.Context, _ string, fn func(context.Context, storage.AccountTx) error) error {
	return fn(ctx, s)
}

func (s *fakeStore) InstancesPerAccount(context.Context, []string, string) (map[string]int, error) {
	return nil, nil
}

func (s *fakeStore) SetInstanceAccount(context.Context, string, string, bool) error { return nil }

// InstanceAccount answers like an instance recorded before keb kept accounts on instances: the
// step falls back to the operation's record.
func (s *fakeStore) InstanceAccount(context.Context, string) (string, bool, error) {
	return "", false, nil
}

// ArchiveAndRemove records the archive row; removing the instance is part of
// the same call, so the fake keeps no separate record of it.
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

// The fake must satisfy the pipeline's Store.
var _ deprovisioning.Store = (*fakeStore)(nil)
