// Package kebbinary gives the tests that run keb as a process (the walkthrough's `keb dev`, the fault
// suite's replicas, `keb taskrun`) one keb binary built from this tree.
//
// `make test` builds it once, before `go test ./...`, and names it in KEB_TEST_BINARY, so that the suites
// share it instead of each linking keb again; without the variable (a plain `go test`) each test binary
// builds its own.
package kebbinary

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Env names a keb binary built from this tree for the tests to run.
const Env = "KEB_TEST_BINARY"

// Path returns $KEB_TEST_BINARY when it is set, else builds keb into dir and returns that binary's path.
func Path(dir string) (string, error) {
	if bin := os.Getenv(Env); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", Env, bin, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s names a keb binary that is not there (make test builds it): %w", Env, err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "keb")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kyma-keb/keb/cmd/keb").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building keb: %w\n%s", err, out)
	}
	return bin, nil
}
