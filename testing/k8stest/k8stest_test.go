package k8stest

import (
	"testing"

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
