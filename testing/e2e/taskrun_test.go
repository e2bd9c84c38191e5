package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/kebbinary"
)

// buildKeb returns the keb binary for a test that runs its CLI: make test's, or one built for the test.
func buildKeb(t *testing.T) string {
	t.Helper()
	bin, err := kebbinary.Path(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestTaskrun: `keb taskrun` runs kubectl get ns in each of 5 runtimes with
// its admin kubeconfig and its identity in the environment, and reports a
// runtime whose command fails, exiting non-zero.
func TestTaskrun(t *testing.T) {
	keb := buildKeb(t)
	s := newStack(t, infrasim.ModeShared, 0)
	const n = 5
	var wg sync.WaitGroup
	for i := range n {
		freshAccount(t, s.kcp, fmt.Sprintf("azure-tr-%d", i))
		wg.Go(func() {
			code, body := s.call(http.MethodPut, fmt.Sprintf("/oauth/v2/service_instances/e2e-tr-%d?accepts_incomplete=true", i),
				fmt.Sprintf(`{"service_id": "%s", "plan_id": "%s", "context": {"globalaccount_id": "ga-tr-%d", "subaccount_id": "sa-tr-%d",
				"user_id": "me@example.com"}, "parameters": {"name": "tr-%d", "region": "westeurope"}}`, serviceID, azurePlanID, i, i, i))
			if code != http.StatusAccepted {
				t.Errorf("provision %d: %d %v", i, code, body)
				return
			}
			if state, desc := s.waitFor(fmt.Sprintf("e2e-tr-%d", i), body["operation"].(string), 4*time.Minute); state != "succeeded" {
				t.Errorf("provisioning %d ended %s: %s", i, state, desc)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	kcpKubeconfig := filepath.Join(t.TempDir(), "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kcpKubeconfig); err != nil {
		t.Fatal(err)
	}
	tok, err := s.key.Mint(testIssuer, testAud, "operator", []string{auth.ScopeCLDRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	taskrun := func(command ...string) (string, string, error) {
		cmd := exec.Command(keb, append([]string{"taskrun", "--url", s.url, "--token", tok, "--kcp-kubeconfig", kcpKubeconfig,
			"--target", "account=ga-tr-0", "--target", "account=ga-tr-1", "--target", "account=ga-tr-2", "--target", "account=ga-tr-3",
			"--target", "account=ga-tr-4", "--parallelism", "3", "--"}, command...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	out, errOut, err := taskrun("kubectl", "get", "ns", "-o", "name")
	if err != nil || !strings.Contains(out, "5 runtimes: 5 succeeded, 0 failed") {
		t.Fatalf("kubectl get ns on 5 runtimes: %v\n%s\n%s", err, out, errOut)
	}
	for i := range n {
		if !strings.Contains(out, fmt.Sprintf(" %s] namespace/kube-system", s.runtime(fmt.Sprintf("e2e-tr-%d", i))["runtimeID"])) {
			t.Errorf("no prefixed kubectl output of runtime %d:\n%s", i, out)
		}
	}
	t.Logf("taskrun kubectl get ns:\n%s", out)

	// Each runtime looks for a namespace named after its shoot; one runtime
	// lacks it, and its command fails.
	var missing string
	for i := range n {
		shoot := s.runtime(fmt.Sprintf("e2e-tr-%d", i))["shootName"].(string)
		if i == 3 {
			missing = shoot
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tr-" + shoot}}
		if err := s.runtimeClient(s.runtime(fmt.Sprintf("e2e-tr-%d", i))["runtimeID"].(string)).Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, err = taskrun("sh", "-c", `kubectl get ns "tr-$SHOOT_NAME" -o name && echo "$INSTANCE_ID $PLAN_NAME $GLOBALACCOUNT_ID"`)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(out, "5 runtimes: 4 succeeded, 1 failed") ||
		!strings.Contains(errOut, `namespaces "tr-`+missing+`" not found`) || !strings.Contains(out, "e2e-tr-0 azure ga-tr-0") {
		t.Fatalf("one runtime failing: %v\n%s\n%s", err, out, errOut)
	}
	t.Logf("taskrun with one failure:\n%s%s", out, errOut)
}
