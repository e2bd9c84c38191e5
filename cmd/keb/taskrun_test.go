package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// TestTaskrunStopsOnInterrupt: a cancelled run (Ctrl-C) stops the running
// command with SIGTERM at once, starts no further runtime, and reports both.
func TestTaskrunStopsOnInterrupt(t *testing.T) {
	t.Parallel()
	kcp := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: im.KubeconfigSecretName("rt-1")},
		Data:       map[string][]byte{im.KubeconfigKey: []byte("apiVersion: v1\nkind: Config\n")}}).Build()
	var stdout, stderr bytes.Buffer
	o := &taskrunOptions{stdout: &stdout, stderr: &stderr, parallelism: 1}
	ctx, cancel := context.WithCancel(t.Context())
	out := &prefixedOutput{stdout: &stdout, stderr: &stderr}
	began := time.Now()
	time.AfterFunc(300*time.Millisecond, cancel)
	res := o.runOne(ctx, kcp, t.TempDir(), runtimelisting.RuntimeDTO{RuntimeID: "rt-1", ShootName: "c-1"},
		[]string{"sh", "-c", `echo "started with $KUBECONFIG"; trap 'echo terminated; exit 143' TERM; sleep 30 & wait`}, out)
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("the command ran %s after the interrupt", took)
	}
	if res.err == nil || res.err.Error() != "stopped" || res.exitCode == 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(stdout.String(), "[c-1 rt-1] started with ") || !strings.Contains(stdout.String(), "[c-1 rt-1] terminated") {
		t.Fatalf("output:\n%s", stdout.String())
	}
	err := o.summary([]taskResult{res, {rt: runtimelisting.RuntimeDTO{RuntimeID: "rt-2"}, exitCode: -1, err: errors.New("not run: stopped")}})
	if err == nil || !strings.Contains(stdout.String(), "2 runtimes: 0 succeeded, 2 failed") || !strings.Contains(stdout.String(), "not run: stopped") {
		t.Fatalf("summary %v:\n%s", err, stdout.String())
	}
}

func TestTaskrunSelects(t *testing.T) {
	t.Parallel()
	rt := runtimelisting.RuntimeDTO{GlobalAccountID: "ga", SubAccountID: "sa", RuntimeID: "r", ServicePlanName: "azure",
		ProviderRegion: "westeurope", ShootName: "c"}
	for _, tc := range []struct {
		sel  string
		want bool
	}{
		{"all", true}, {"account=ga", true}, {"account=ga,plan=azure,region=westeurope", true},
		{"account=ga,plan=aws", false}, {"shoot=c,runtime-id=r,subaccount=sa", true}, {"subaccount=other", false},
	} {
		sel, err := parseSelector(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := selects(orchestration.Selectors{sel}, rt); got != tc.want {
			t.Errorf("%s: %v", tc.sel, got)
		}
	}
}
