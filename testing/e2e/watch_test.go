package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
)

// Provisionings waiting for their clusters go on as soon as the
// infrastructure manager reports them ready: the control-plane watch wakes
// them. Their poll is set to an hour here, so a lost wake-up leaves an
// operation in progress long past the test's bound. Several at once, so that
// wake-ups land while workers are busy with the other operations.
func TestWatchWakesWaitingProvisionings(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.Engine.RuntimePoll = time.Hour })
	// One global account, so one pool account of this test's own: the
	// stacks of earlier tests may hold the seeded ones.
	if err := createAccount(t.Context(), s.kcp, "azure-wake", hyperscaler.TypeAzure); err != nil {
		t.Fatal(err)
	}
	const n = 6
	ops := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("wake-%d", i)
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
			"context": {"globalaccount_id": "ga-wake", "subaccount_id": "sa-`+id+`", "user_id": "me@example.com"},
			"parameters": {"name": "`+id+`"}}`)
		ops[i] = s.accepted("provision", code, body)
	}
	// Far below the hour-long poll: only wake-ups get there. The
	// operations run at once; they are only checked one after the other.
	for i, op := range ops {
		if state, desc := s.waitFor(fmt.Sprintf("wake-%d", i), op, 3*time.Minute); state != "succeeded" {
			t.Errorf("provisioning wake-%d ended %s: %s", i, state, desc)
		}
	}
}
