package k8stest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
)

var env *Environment

func TestMain(m *testing.M) { Main(m, &env) }

func TestCRDsAreServed(t *testing.T) {
	t.Parallel()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, apiVersion, kind string }{
		{"runtime", "infrastructuremanager.kyma-project.io/v1", "Runtime"},
		{"kyma", "operator.kyma-project.io/v1beta2", "Kyma"},
		{"btpoperator", "operator.kyma-project.io/v1alpha1", "BtpOperator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(tc.apiVersion)
			u.SetKind(tc.kind)
			u.SetNamespace("default")
			u.SetName("probe")
			if tc.kind == "Runtime" {
				// A Runtime as keb writes it: the CRD requires what the
				// infrastructure manager's does.
				rt, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(runtimetest.Runtime("default", "probe"))
				if err != nil {
					t.Fatal(err)
				}
				u.Object["spec"] = rt["spec"]
			}
			if err := c.Create(t.Context(), u); err != nil {
				t.Fatalf("creating %s: %v", tc.kind, err)
			}
		})
	}
}

// TestStartWithTunesTheAPIServerOnly: StartWith's flags and environment
// reach the kube-apiserver, and the environment reaches neither etcd nor
// this process (whose other children, keb replicas in testing/scaleload,
// must run with their own).
func TestStartWithTunesTheAPIServerOnly(t *testing.T) {
	t.Parallel()
	e, err := StartWith([]*apiextensionsv1.CustomResourceDefinition{}, Options{
		APIServerArgs: map[string]string{"default-watch-cache-size": "77"},
		APIServerEnv:  []string{"GOMEMLIMIT=3GiB", "K8STEST_PROBE=apiserver only"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	pid, args, err := findAPIServer(e.env.ControlPlane.APIServer.SecureServing.ListenAddr.Port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(args, "--default-watch-cache-size=77") {
		t.Errorf("the apiserver runs with %q, want --default-watch-cache-size=77 among them", args)
	}
	environ := func(pid int) []string {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(raw), "\x00")
	}
	for _, kv := range []string{"GOMEMLIMIT=3GiB", "K8STEST_PROBE=apiserver only"} {
		if !slices.Contains(environ(pid), kv) {
			t.Errorf("the apiserver's environment lacks %s", kv)
		}
	}
	etcd := e.env.ControlPlane.Etcd.URL.Port()
	etcdPID := 0
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		raw, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if args := strings.Split(string(raw), "\x00"); filepath.Base(args[0]) == "etcd" && strings.Contains(string(raw), "127.0.0.1:"+etcd) {
			etcdPID, _ = strconv.Atoi(ent.Name())
		}
	}
	if etcdPID == 0 {
		t.Fatalf("no etcd serving on port %s", etcd)
	}
	for _, env := range [][]string{environ(etcdPID), os.Environ()} {
		if slices.Contains(env, "K8STEST_PROBE=apiserver only") {
			t.Errorf("the apiserver's environment leaked: %v", env)
		}
	}
}
