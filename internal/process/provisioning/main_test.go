package provisioning_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// env is the package's kube-apiserver, with keb's CRDs. Every test works in a namespace of its
// own (except where the product hard-codes kcp-system), so tests run in parallel on it.
var env *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

// kcpClient is the package's one uncached client on keb's scheme.
func kcpClient(t *testing.T) client.Client { return processtest.Client(t, env.Config) }

// stepNames are the names of the steps of d's pipeline, in order.
func stepNames(d provisioning.Deps) []string {
	var out []string
	for _, s := range provisioning.Pipeline(d).Steps {
		out = append(out, s.Name())
	}
	return out
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t *testing.T) string { return processtest.Namespace(t, kcpClient(t), "prov") }

// ensureNamespace creates ns unless it exists.
func ensureNamespace(t *testing.T, ns string) { processtest.EnsureNamespace(t, kcpClient(t), ns) }

// testConfig is a step configuration on namespace ns with recognisable poll intervals.
func testConfig(ns string) provisioning.Config {
	return provisioning.Config{
		DefaultKymaVersion: "2.20.0",
		Namespace:          ns,
		Kyma:               kyma.Settings{ShootDomain: "kyma.example.com"},
		AccountTimeout:     30 * time.Minute,
		RuntimeTimeout:     time.Hour,
		BTPManagerTimeout:  20 * time.Minute,
		AccountPoll:        time.Minute,
		RuntimePoll:        30 * time.Second,
		BTPManagerPoll:     10 * time.Second,
		// keb's shipped settings.
		Runtime: provisioning.RuntimeSettings{KubernetesVersion: config.Defaults.Engine.Runtime.KubernetesVersion,
			MaxPods: config.Defaults.Engine.Runtime.MaxPods},
	}
}

// newOp returns a provisioning operation of a fresh instance of planID with the given raw
// parameters ("" for none).
func newOp(t *testing.T, planID, params string) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, planID)
	inst.PlatformRegion = "cf-eu10"
	if params != "" {
		inst.Parameters = json.RawMessage(params)
	}
	return processtest.Operation(storage.OperationTypeProvision, inst)
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
