package k8stest

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// Kubectl runs bin/k8s's kubectl against the environment's apiserver as a cluster admin, with
// stdin as its input, and returns what it printed (stdout and stderr) and whether it failed.
// Tests use it to hold objects to `kubectl apply --dry-run=server --validate=strict`, as an
// operator checks them against a real control plane.
func (e *Environment) Kubectl(t testing.TB, stdin []byte, args ...string) (string, error) {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, out.String())
	}
	return out.String(), nil
}
