package faults

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestControlPlaneStop stops the control plane's kube-apiserver while
// provisionings wait on it: last_operation says the operations are retrying
// because the control plane is unreachable, /readyz reports it (the broker
// keeps answering: "degraded"), and once it is back every operation
// finishes and nothing is left behind.
func TestControlPlaneStop(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 1, accounts: 20, delay: 3 * time.Second})
	ops := s.provisionMany("kcp", 10)

	restart, err := s.kcp.StopAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = restart()
		}
	}()
	var said string
	waitFor(t, 3*time.Minute, "last_operation saying the control plane is unreachable", func() bool {
		for _, op := range ops {
			a, err := s.call(s.replicas[0], http.MethodGet,
				fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=%s", op.instanceID, op.operationID), "")
			if err == nil && a.status == http.StatusOK {
				if d, _ := a.body["description"].(string); strings.HasPrefix(d, "retrying: the control plane is unreachable (since ") {
					said = d
					return true
				}
			}
		}
		return false
	})
	t.Logf("last_operation while the control plane is down: %q", said)
	// The readiness checks run in the background: theirs may see it later.
	var ready readiness
	waitFor(t, time.Minute, "/readyz reporting the control plane down", func() bool {
		ready = s.readyz()
		return !ready.check("control plane").OK
	})
	if ready.Status != "degraded" {
		t.Errorf("/readyz with the control plane down: %+v", ready)
	}

	if err := restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	live := s.expectSucceeded(ops, 5*time.Minute)
	waitFor(t, 2*time.Minute, "/readyz ready again with the watch running", func() bool {
		r := s.readyz()
		return r.Status == "ready" && r.check("control plane watch").OK
	})
	s.checkInvariants(live)
}

// TestMissingCRDs starts keb against a control plane without keb's CRDs, as
// a new operator might: /readyz is 503 and says which kind is missing, the
// watch reports that it keeps restarting; once the CRDs are installed the
// watch runs and the replica is ready, without a restart.
func TestMissingCRDs(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 1, noCRDs: true})
	var before readiness
	waitFor(t, time.Minute, "the watch reporting its restarts", func() bool {
		before = s.readyz()
		return strings.Contains(before.check("control plane watch").Detail, "restarting with backoff")
	})
	crds := before.check("control plane CRDs")
	if before.Status != "unavailable" || crds.OK || !strings.Contains(crds.Detail, "install keb's CRDs") {
		t.Fatalf("/readyz without CRDs: %+v", before)
	}
	if err := s.kcp.InstallCRDs(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "ready once the CRDs exist", func() bool {
		r := s.readyz()
		return r.Status == "ready" && r.check("control plane watch").OK
	})
}
