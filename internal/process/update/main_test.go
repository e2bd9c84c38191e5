package update_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver with keb's CRDs. It stands for the control plane and, where
// a test says so, for a runtime: the sap-btp-manager Secret has a fixed name in kyma-system, so
// the tests that use it as a runtime run one after another.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

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

// testConfig has recognisable values, so a test can tell which one a step used.
func testConfig() update.Config {
	return update.Config{BTPManagerTimeout: 20 * time.Minute, BTPManagerPoll: 10 * time.Second}
}

// runtimeClients is a fake of the runtime client cache.
type runtimeClients struct {
	c     client.Client
	err   error
	calls atomic.Int32
	asked atomic.Value // the runtime ID asked for
}

func (r *runtimeClients) Client(_ context.Context, runtimeID string) (client.Client, error) {
	r.calls.Add(1)
	r.asked.Store(runtimeID)
	return r.c, r.err
}

// credentials are the new sm_operator_credentials of a PATCH.
var credentials = catalog.SMOperatorCredentials{ClientID: "new-cid", ClientSecret: "new-csecret",
	SMURL: "https://sm.new.example.com", URL: "https://auth.new.example.com", XSAppName: "app"}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newOp returns an update operation of a running azure instance holding creds (nil: none).
func newOp(t *testing.T, creds *catalog.SMOperatorCredentials) *process.Operation {
	t.Helper()
	instanceID := uuid.NewString()
	runtimeID := uuid.NewString()
	inst := storage.Instance{
		InstanceID:      instanceID,
		RuntimeID:       runtimeID,
		GlobalAccountID: "ga-" + uuid.NewString()[:8],
		SubAccountID:    "sa-" + uuid.NewString()[:8],
		ServiceID:       catalog.ServiceID,
		PlanID:          catalog.AzurePlanID,
		PlanName:        "azure",
		Provider:        "azure",
		ClusterID:       uuid.NewString(),
		ShootName:       "c-" + strings.ReplaceAll(runtimeID, "-", "")[:7],
		State:           storage.RuntimeSucceeded,
	}
	if creds != nil {
		inst.Credentials = []byte(mustJSON(t, creds))
	}
	return &process.Operation{
		Operation: storage.Operation{
			ID:         uuid.NewString(),
			InstanceID: instanceID,
			Type:       storage.OperationTypeUpdate,
			State:      storage.StateInProgress,
		},
		Instance: inst,
	}
}

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

func mustOutcome(t *testing.T, what string, want outcome, res process.StepResult, err error) {
	t.Helper()
	if got := outcomeOf(res, err); got != want {
		t.Fatalf("%s: outcome %s (result %+v, error %v), want %s", what, got, res, err, want)
	}
}

// missingFrom returns the first of subs that s lacks, or "".
func missingFrom(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}
