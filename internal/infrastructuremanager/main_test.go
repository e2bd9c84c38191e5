package infrastructuremanager

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver, with keb's CRDs installed.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func kcpClient(t *testing.T) client.Client { return env.Client(t, k8stest.Scheme(t, AddToScheme)) }
