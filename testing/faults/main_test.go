// Package faults injects the faults keb must survive into real processes and
// checks what a platform would notice: replicas killed with SIGKILL, the
// database stopped and frozen (SIGSTOP), the control-plane apiserver
// stopped, DELETEs racing PUTs, and many provision/deprovision cycles. Each
// test runs its own PostgreSQL (never the machine's shared one), its own
// kube-apiserver and `keb serve` processes, and asserts that every 202
// reaches a final state, no Runtime or Kyma CR is duplicated, no
// hyperscaler account is left claimed without a live instance, and no
// object is left behind.
//
// The failover scenarios run keb on a highly available PostgreSQL
// (testing/pgha: a primary and a synchronous standby) and kill, stop, cut
// off and promote its servers under load; with the rolling restart and the
// restore of a base backup, only TestFailoverKillPrimary runs in `make
// test`, the others in `make faults` (faultsOnly).
//
// `make test` runs the quick variants, two at a time (go test's -parallel is
// the number of cores); `make faults` (KEB_FAULTS=long) runs the long soak as
// well, one test after another (-parallel 1): each stack is several servers,
// and the timings the tests log (a takeover, the soak's heap) should measure
// keb, not the machine.
package faults

import (
	"fmt"
	"os"
	"testing"

	"github.com/sirupsen/logrus"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/testing/kebbinary"
	"github.com/kyma-keb/keb/testing/niceness"
)

// kebBin is the keb binary the tests run as replicas (make test's shared one, or built here).
var kebBin string

// long reports whether the long variants run (make faults).
func long() bool { return os.Getenv("KEB_FAULTS") == "long" }

// faultsOnly leaves a scenario to `make faults`: `make test` runs one quick
// failover scenario (TestFailoverKillPrimary) and these only there, to stay
// within CI's time.
func faultsOnly(t *testing.T) {
	t.Helper()
	if !long() {
		t.Skip("runs in `make faults` (KEB_FAULTS=long)")
	}
}

func TestMain(m *testing.M) {
	// Stacks two at a time: they take the CPU left over by make test's serial end-to-end suite (niceness
	// package). `make faults`, which runs them alone, is unaffected.
	niceness.Lower(10)
	// Everything the tests start (PostgreSQL, apiservers, replicas) dies
	// with the test binary.
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	ctrllog.SetLogger(logging.Logr(logrus.StandardLogger()))
	if os.Getenv(envRigChild) != "" {
		// A rig started in a child test binary (TestRigPostgresDiesWithItsTestBinary):
		// it needs no keb binary.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "keb-faults-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if kebBin, err = kebbinary.Path(dir); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
