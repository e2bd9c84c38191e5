package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/infrasim"
)

// Provisionings waiting for their clusters go on as soon as the
// infrastructure manager reports them ready: the control-plane watch wakes
// them. Their poll is set to an hour here, so a lost wake-up leaves an
// operation in progress long past the test's bound. Several at once, so that
// wake-ups land while workers are busy with the other operations.
func TestWatchWakesWaitingProvisionings(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 6, func(c *config.Config) { c.Engine.RuntimePoll = time.Hour })
	const n = 6
	ops := make([]string, n)
	for i := range n {
		tenant := fmt.Sprintf("wake-%d", i)
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+tenant+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
			"context": {"globalaccount_id": "`+tenant+`", "subaccount_id": "sa-`+tenant+`", "user_id": "me@example.com"},
			"parameters": {"name": "`+tenant+`"}}`)
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
