package faults

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/pgserver"
	"github.com/kyma-keb/keb/testing/pgha"
)

// TestDatabaseStopAndStart stops PostgreSQL with operations in flight. While
// it is down, requests are answered 503 with Retry-After and an OSB body,
// nothing is written, and /readyz says the database did not answer; once it
// is back every accepted operation finishes.
func TestDatabaseStopAndStart(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 1, accounts: 20, delay: 2 * time.Second, env: []string{"APP_REQUEST_TIMEOUT=5s"}})
	ops := s.provisionMany("stop", 10)

	if err := s.pg.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.expectUnavailable("stop-while-down")
	s.restartPG()

	s.finishAndCleanUp(ops, "stop-while-down")
}

// TestDatabaseFreeze freezes PostgreSQL (SIGSTOP of the postmaster and its
// backends) with operations in flight: requests end with a 503 within the
// request deadline instead of hanging, and once it thaws every accepted
// operation finishes.
func TestDatabaseFreeze(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 1, accounts: 20, delay: 2 * time.Second, env: []string{"APP_REQUEST_TIMEOUT=3s"}})
	ops := s.provisionMany("freeze", 10)

	frozen := s.signalPG(syscall.SIGSTOP)
	thawed := false
	thaw := func() {
		if !thawed {
			s.signalPIDs(frozen, syscall.SIGCONT)
			thawed = true
		}
	}
	defer thaw() // a failed assertion must not leave a frozen server behind
	began := time.Now()
	s.expectUnavailable("freeze-while-frozen")
	t.Logf("with the database frozen, PUT, last_operation and /readyz were answered 503 in %s in all", time.Since(began).Round(time.Millisecond))
	thaw()

	s.finishAndCleanUp(ops, "freeze-while-frozen")
}

// expectUnavailable checks the answers of a replica without a usable
// database: a PUT of instanceID and a poll get 503 with Retry-After and an
// OSB body; /readyz gets 503 naming the database without connection
// details.
func (s *stack) expectUnavailable(instanceID string) {
	s.t.Helper()
	r := s.replicas[0]
	put, err := s.provision(r, instanceID, "ga-"+instanceID)
	if err != nil {
		s.t.Fatalf("PUT with the database unavailable: %v", err)
	}
	s.expect503("PUT", put)
	poll, err := s.call(r, http.MethodGet, "/oauth/v2/service_instances/"+instanceID+"/last_operation", "")
	if err != nil {
		s.t.Fatal(err)
	}
	s.expect503("last_operation", poll)
	list, err := s.call(r, http.MethodGet, "/runtimes", "")
	if err != nil {
		s.t.Fatal(err)
	}
	s.expect503("GET /runtimes", list)

	// The readiness checks run in the background: theirs may see it later.
	var body []byte
	waitFor(s.t, time.Minute, "/readyz reporting the database down", func() bool {
		res, err := s.httpClient.Get(r.url("/readyz"))
		if err != nil {
			s.t.Fatal(err)
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), `"name":"database","ok":false`)
	})
	for _, secret := range []string{strconv.Itoa(s.pg.Port), "127.0.0.1", "user="} {
		if strings.Contains(string(body), secret) {
			s.t.Errorf("/readyz reveals %q: %s", secret, body)
		}
	}
}

func (s *stack) expect503(what string, a answer) {
	s.t.Helper()
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" ||
		a.body["error"] != "ServiceUnavailable" || a.body["description"] == "" {
		s.t.Errorf("%s with the database unavailable: %d Retry-After=%q %v; want 503 with Retry-After and an OSB body",
			what, a.status, a.header.Get("Retry-After"), a.body)
	}
}

// finishAndCleanUp waits for ops, checks that the instance refused while the
// database was unavailable was never written, deprovisions every instance
// and checks that nothing is left.
func (s *stack) finishAndCleanUp(ops []accepted, refused string) {
	s.t.Helper()
	s.expectSucceeded(ops, 5*time.Minute)
	var n int
	if err := s.db.QueryRow(context.Background(), `SELECT count(*) FROM instances WHERE instance_id = $1`, refused).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	if n != 0 {
		s.t.Errorf("the PUT answered 503 left instance %s behind", refused)
	}
	var dels []accepted
	for i, op := range ops {
		a, err := s.deprovision(s.replicas[i%len(s.replicas)], op.instanceID)
		if err != nil || a.status != http.StatusAccepted {
			s.t.Fatalf("DELETE %s: %d %v %v", op.instanceID, a.status, a.body, err)
		}
		dels = append(dels, accepted{op.instanceID, a.body["operation"].(string), "deprovision"})
	}
	for _, op := range dels {
		if st := s.waitFinal([]accepted{op}, 5*time.Minute)[op.operationID]; st != "succeeded" {
			s.t.Errorf("deprovisioning of %s: %s", op.instanceID, st)
		}
	}
	s.checkInvariants(map[string]string{})
}

// restartPG starts the stopped PostgreSQL again on its port.
func (s *stack) restartPG() {
	s.t.Helper()
	pg, err := pgserver.Start(context.Background(), pgserver.Options{DataDir: s.pgData, Port: s.pg.Port, Throwaway: true})
	if err != nil {
		s.t.Fatalf("restarting PostgreSQL: %v", err)
	}
	if pg.Port != s.pg.Port {
		s.t.Fatalf("PostgreSQL came back on port %d, not %d", pg.Port, s.pg.Port)
	}
	s.pg = pg
}

// signalPG sends sig to the test's postmaster and all its backends, and
// returns their PIDs. Only this test's server is touched, never the
// machine's shared one.
func (s *stack) signalPG(sig syscall.Signal) []int {
	s.t.Helper()
	pids, err := pgha.Signal(s.pgData, sig)
	if len(pids) == 0 {
		s.t.Fatal(err)
	}
	if err != nil {
		s.t.Log(err)
	}
	return pids
}

func (s *stack) signalPIDs(pids []int, sig syscall.Signal) {
	if err := pgha.SignalPIDs(pids, sig); err != nil {
		s.t.Log(err)
	}
}
