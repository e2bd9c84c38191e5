// Package userkubeconfig builds the kubeconfig people use to reach a runtime
// (GET /kubeconfig/{instance_id}, `keb kubeconfig`): the runtime's API server
// and CA from its kubeconfig Secret, and one user per OIDC provider of its
// Runtime CR, each logging in through the kubectl oidc-login plugin. It holds
// no secret: whoever uses it still needs an identity the provider vouches for.
package userkubeconfig

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// Provider is one OIDC provider the runtime's API server trusts.
type Provider struct {
	IssuerURL string
	ClientID  string
}

// Providers returns the OIDC providers of a Runtime CR in KIM's shape:
// spec.shoot.kubernetes.kubeAPIServer.oidcConfig first, then each entry of
// additionalOidcConfig, leaving out entries without an issuer or client ID
// (no login can be built from them) and repeats of one issuer and client.
func Providers(rt *im.Runtime) []Provider {
	api := rt.Spec.Shoot.Kubernetes.KubeAPIServer
	var configs []im.OIDCConfig
	if api.OIDCConfig != nil {
		configs = append(configs, *api.OIDCConfig)
	}
	if api.AdditionalOIDCConfig != nil {
		configs = append(configs, *api.AdditionalOIDCConfig...)
	}
	var out []Provider
	seen := map[Provider]bool{}
	for _, c := range configs {
		if c.IssuerURL == nil || c.ClientID == nil || *c.IssuerURL == "" || *c.ClientID == "" {
			continue
		}
		p := Provider{IssuerURL: *c.IssuerURL, ClientID: *c.ClientID}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Plugin is the kubectl plugin each user runs for its token.
const Plugin = "kubectl-oidc_login"

// Build returns the kubeconfig YAML for a runtime named name (the instance's
// name parameter): one cluster, and one user and context per provider, the
// first provider's context current. The first user and context are called
// name (its bytes that are not UTF-8 replaced by "-"), the n-th name-n. Without providers it has the cluster and a context
// without a user.
func Build(name string, ep runtimeclient.Endpoint, providers []Provider) ([]byte, error) {
	// YAML holds UTF-8 only: a name with other bytes would be written
	// changed, and its context would then name no cluster.
	name = strings.ToValidUTF8(name, "-")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: ep.Server, CertificateAuthorityData: ep.CAData, TLSServerName: ep.TLSServerName}
	cfg.CurrentContext = name
	if len(providers) == 0 {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name}
	}
	for i, p := range providers {
		user := name
		if i > 0 {
			user = name + "-" + strconv.Itoa(i+1)
		}
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1beta1",
			Command:    Plugin,
			Args: []string{"get-token", "--oidc-issuer-url=" + p.IssuerURL, "--oidc-client-id=" + p.ClientID,
				"--oidc-extra-scope=email", "--oidc-extra-scope=openid"},
			InteractiveMode: clientcmdapi.IfAvailableExecInteractiveMode,
		}}
		cfg.Contexts[user] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the kubeconfig of %s: %w", name, err)
	}
	return out, nil
}
