package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/simstack"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// keb sim on its own against a control plane: once its stand-ins answer it
// writes their settings; its infrastructure manager acts on the control
// plane's Runtime CRs as the real one does (a Runtime naming a binding the
// project lacks fails with Gardener's refusal); on SIGTERM it stops and
// takes its settings file with it.
func TestSimAgainstAControlPlane(t *testing.T) {
	bins, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, controlplane.Namespace)
	k8stest.EnsureNamespace(t, c, "garden-sim-test")

	var stderr bytes.Buffer
	p := startKeb(t, &stderr, &stderr, "sim", "--kcp-kubeconfig", kubeconfig, "--dir", filepath.Join(dir, "sim"),
		"--k8s-bin-dir", bins, "--runtime-mode", "shared", "--runtime-delay", "0", "--gardener-project", "sim-test",
		"--lifecycle-manager=false", "--account-cleanup-delay", "0", "--log-format", "text")
	cmd, exited := p.Cmd, p.exited
	settingsPath := filepath.Join(dir, "sim", simstack.SettingsFile)
	var settings simstack.Settings
	hang := time.After(2 * time.Minute) // a bound against a hang, not a timing claim
	for settings == nil {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("keb sim exited before writing its settings (%v):\n%s", err, stderr.String())
		case <-hang:
			t.Fatalf("keb sim wrote no settings within 2 minutes:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if settings, err = simstack.ReadSettings(settingsPath); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for name, url := range map[string]string{"AVS": settings.AVSAPIEndpoint(), "EDP": settings.EDPAdminURL(),
		"IAS": settings.IASURL(), "Director": settings.DirectorURL()} {
		if url == "" {
			t.Errorf("no %s stand-in in the settings: %v", name, settings)
			continue
		}
		// Without credentials a stand-in refuses, as the service does: it answers.
		res, err := http.Get(url)
		if err != nil {
			t.Errorf("%s stand-in at %s: %v", name, url, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusNotFound &&
			res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s stand-in answered an anonymous GET with %d", name, res.StatusCode)
		}
	}

	name := fmt.Sprintf("sim-test-%d", time.Now().UnixNano())
	rt := &im.Runtime{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: name,
		Labels: map[string]string{controlplane.LabelRuntimeID: name, controlplane.LabelGlobalAccountID: "ga-sim-test"}},
		Spec: im.RuntimeSpec{Shoot: im.RuntimeShoot{Name: "c-sim", Purpose: "development", PlatformRegion: "cf-eu20",
			Region: "westeurope", SecretBindingName: "no-such-binding",
			Provider: im.Provider{Type: "azure", Workers: []im.Worker{{Name: im.KymaWorkerName,
				Machine: im.Machine{Type: "Standard_D2s_v5"}, Minimum: 3, Maximum: 20, Zones: []string{"1", "2", "3"}}}},
			Networking: im.Networking{Nodes: "10.250.0.0/16", Pods: "10.96.0.0/13", Services: "10.104.0.0/13"}},
			Security: im.Security{Administrators: []string{"admin@example.com"}}}}
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	hang = time.After(2 * time.Minute)
	for rt.Status.State != im.StateFailed {
		select {
		case <-hang:
			t.Fatalf("the Runtime naming a missing binding is %q after 2 minutes; keb sim's log:\n%s", rt.Status.State, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rt), rt); err != nil {
			t.Fatal(err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("keb sim exited with %v on SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("keb sim did not stop within a minute of SIGTERM:\n%s", stderr.String())
	}
	if _, err := os.Stat(settingsPath); !os.IsNotExist(err) {
		t.Errorf("keb sim left its settings file behind (%v): it names stand-ins that are gone", err)
	}
}

// keb sim without a control plane says how to name one, and starts nothing.
func TestSimWithoutAControlPlane(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("APP_KCP_KUBECONFIG", "")
	dir := t.TempDir()
	code, _, errOut := runKeb("sim", "--dir", dir)
	if code != 1 || !strings.Contains(errOut, "--kcp-kubeconfig") {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 and a pointer to --kcp-kubeconfig", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, simstack.SettingsFile)); !os.IsNotExist(err) {
		t.Errorf("keb sim without a control plane wrote settings: %v", err)
	}
}
