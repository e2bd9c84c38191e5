// Package niceness lowers the CPU priority of a test binary and of everything it starts.
//
// `make test` runs the long suites side by side (go test -p 4). testing/e2e runs its tests one after another,
// each waiting on its processes, so it is the run's longest chain when the walkthrough's and the fault suite's
// stacks take the CPU from it; those two suites run many stacks at once and only need the time left over. Run at a
// lower priority they yield the CPU to the chain and fill what it leaves idle: nothing is skipped or shortened.
package niceness

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// env marks a test binary that already runs at its lower priority.
const env = "KEB_TEST_NICENESS_APPLIED"

// Lower runs the test binary again with its niceness raised by increment (Linux nice values: higher yields),
// unless it already did: processes the binary then starts (PostgreSQL, apiservers, keb) inherit it. It returns
// only in the binary that runs at the lower priority, or when lowering is not possible (it then says why on
// stderr and the tests run unchanged).
func Lower(increment int) {
	if os.Getenv(env) != "" {
		return
	}
	self, err := os.Executable()
	if err == nil {
		// Linux keeps a niceness per thread, and a new program starts with the niceness of the thread that
		// executed it: this thread's, raised, is the whole program's after the exec.
		runtime.LockOSThread()
		if err = syscall.Setpriority(syscall.PRIO_PROCESS, 0, currentNiceness()+increment); err == nil {
			err = syscall.Exec(self, os.Args, append(os.Environ(), env+"=1"))
		}
		runtime.UnlockOSThread()
	}
	fmt.Fprintf(os.Stderr, "niceness: running at normal priority: %v\n", err)
}

// currentNiceness is this thread's nice value (getpriority's raw answer is 20 - nice).
func currentNiceness() int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - p
}
