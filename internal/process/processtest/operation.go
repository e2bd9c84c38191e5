package processtest

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// cat is the embedded catalog, loaded once.
var cat = sync.OnceValues(func() (*catalog.Catalog, error) { return catalog.Load("") })

// Catalog returns the embedded catalog.
func Catalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := cat()
	if err != nil {
		t.Fatalf("loading catalog: %v", err)
	}
	return c
}

// Instance returns an instance of the embedded catalog's plan planID (PlanName empty when the
// catalog has no such plan) with fresh instance, global account and subaccount IDs. Callers set
// what their pipeline expects to have happened before: a runtime ID, a provider, credentials.
func Instance(t testing.TB, planID string) storage.Instance {
	t.Helper()
	var planName string
	if p, ok := Catalog(t).PlanByID(planID); ok {
		planName = p.Name
	}
	return storage.Instance{
		InstanceID:      uuid.NewString(),
		GlobalAccountID: "ga-" + uuid.NewString()[:8],
		SubAccountID:    "sa-" + uuid.NewString()[:8],
		UserID:          "jane.doe@example.com",
		ServiceID:       catalog.ServiceID,
		PlanID:          planID,
		PlanName:        planName,
	}
}

// Operation returns an in-progress operation of type opType on inst, with a fresh ID. The
// engine's clock is not set: step tests call Run directly.
func Operation(opType storage.OperationType, inst storage.Instance) *process.Operation {
	return &process.Operation{
		Operation: storage.Operation{
			ID:         uuid.NewString(),
			InstanceID: inst.InstanceID,
			Type:       opType,
			State:      storage.OperationInProgress,
		},
		Instance: inst,
	}
}

// MustJSON returns v as JSON, for the raw parameters, operation data and credentials tests
// put into operations and instances.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	return string(b)
}
