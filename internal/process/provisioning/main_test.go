package provisioning_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver, with keb's CRDs. Every test works in a namespace of its
// own (except where the product hard-codes kcp-system), so tests run in parallel on it.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// kcp returns the package's one uncached client on keb's scheme.
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

// cat is the embedded catalog, loaded once.
var cat = sync.OnceValues(func() (*catalog.Catalog, error) { return catalog.Load("") })

func loadCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := cat()
	if err != nil {
		t.Fatalf("loading catalog: %v", err)
	}
	return c
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := "prov-" + uuid.NewString()[:8]
	ensureNamespace(t, ns)
	return ns
}

// ensureNamespace creates ns unless it exists.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	err := kcpClient(t).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// testConfig is a step configuration on namespace ns with recognisable poll intervals.
func testConfig(ns string) provisioning.Config {
	return provisioning.Config{
		DefaultKymaVersion: "2.20.0",
		Namespace:          ns,
		DashboardDomain:    "kyma.example.com",
		AccountTimeout:     30 * time.Minute,
		RuntimeTimeout:     time.Hour,
		BTPManagerTimeout:  20 * time.Minute,
		AccountPoll:        time.Minute,
		RuntimePoll:        30 * time.Second,
		BTPManagerPoll:     10 * time.Second,
	}
}

// planName returns the name of a plan ID of the embedded catalog.
func planName(t *testing.T, planID string) string {
	t.Helper()
	p, ok := loadCatalog(t).PlanByID(planID)
	if !ok {
		return ""
	}
	return p.Name
}

// newOp returns a provisioning operation of a fresh instance of planID with the given raw
// parameters ("" for none). The engine's clock is not set: the steps tested never read it.
func newOp(t *testing.T, planID, params string) *process.Operation {
	t.Helper()
	instanceID := uuid.NewString()
	inst := storage.Instance{
		InstanceID:      instanceID,
		GlobalAccountID: "ga-" + uuid.NewString()[:8],
		SubAccountID:    "sa-" + uuid.NewString()[:8],
		UserID:          "jane.doe@example.com",
		ServiceID:       catalog.ServiceID,
		PlanID:          planID,
		PlanName:        planName(t, planID),
		PlatformRegion:  "cf-eu10",
	}
	if params != "" {
		inst.Parameters = json.RawMessage(params)
	}
	return &process.Operation{
		Operation: storage.Operation{
			ID:         uuid.NewString(),
			InstanceID: instanceID,
			Type:       storage.OperationTypeProvision,
			State:      storage.StateInProgress,
		},
		Instance: inst,
	}
}

// isDone reports whether a step's result means "done".
func isDone(res process.StepResult, err error) bool {
	return err == nil && res.Failure == nil && res.RetryAfter == 0
}

// mustDone fails the test unless the step finished.
func mustDone(t *testing.T, what string, res process.StepResult, err error) {
	t.Helper()
	if !isDone(res, err) {
		t.Fatalf("%s: want done, got result %+v, error %v", what, res, err)
	}
}

// outcome names a step result for table expectations.
type outcome int

const (
	done outcome = iota
	retry
	failure
	temporary // an error: retried with backoff
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

// containsAll reports the first of subs that s lacks, or "".
func missingFrom(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}

// identityStore is a fake of the store's SetRuntimeIdentity: the first IDs offered for an
// instance are kept, later offers get them back (like the UPDATE ... CASE in storage).
type identityStore struct {
	mu    sync.Mutex
	ids   map[string]storage.RuntimeIdentity
	calls int
	err   error
}

func newIdentityStore() *identityStore {
	return &identityStore{ids: map[string]storage.RuntimeIdentity{}}
}

func (s *identityStore) SetRuntimeIdentity(_ context.Context, instanceID string, proposed storage.RuntimeIdentity) (storage.RuntimeIdentity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return storage.RuntimeIdentity{}, s.err
	}
	if have, ok := s.ids[instanceID]; ok {
		return have, nil
	}
	s.ids[instanceID] = proposed
	return proposed, nil
}
