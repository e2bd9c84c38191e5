package runtimeclient

import (
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver: the control plane, and the "runtime"
// the kubeconfigs in these tests point back at.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func testScheme(t *testing.T) *k8sruntime.Scheme { return k8stest.Scheme(t) }

func kcpClient(t *testing.T) client.Client { return env.Client(t, testScheme(t)) }

// kubeconfigFor renders cfg as kubeconfig YAML whose context is named contextName,
// so two calls with different names give different bytes for the same cluster.
func kubeconfigFor(t *testing.T, cfg *rest.Config, contextName string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = contextName
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
