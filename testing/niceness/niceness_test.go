package niceness

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const beforeEnv = "NICENESS_TEST_BEFORE"

func TestMain(m *testing.M) {
	if os.Getenv(env) == "" {
		os.Setenv(beforeEnv, strconv.Itoa(currentNiceness()))
	}
	Lower(5)
	os.Exit(m.Run())
}

// TestLowerRaisesTheNicenessOfTheBinaryAndItsChildren checks what the long suites rely on: the test binary
// and a process it starts run at the raised niceness.
func TestLowerRaisesTheNicenessOfTheBinaryAndItsChildren(t *testing.T) {
	before, err := strconv.Atoi(os.Getenv(beforeEnv))
	if err != nil {
		t.Fatalf("%s: %v", beforeEnv, err)
	}
	want := min(before+5, 19)
	if got := currentNiceness(); got != want {
		t.Errorf("the test binary's niceness is %d, want %d", got, want)
	}
	out, err := exec.Command("cat", "/proc/self/stat").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Field 19 of /proc/<pid>/stat is the niceness; the command name (field 2) has no spaces here.
	fields := strings.Fields(string(out))
	if got, _ := strconv.Atoi(fields[18]); got != want {
		t.Errorf("a child's niceness is %d, want %d", got, want)
	}
}
