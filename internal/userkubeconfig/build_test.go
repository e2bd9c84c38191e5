package userkubeconfig

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

func ptr(s string) *string { return &s }

func TestProvidersReadsBothOIDCFieldsOnce(t *testing.T) {
	rt := &im.Runtime{}
	api := &rt.Spec.Shoot.Kubernetes.KubeAPIServer
	api.OIDCConfig = &im.OIDCConfig{IssuerURL: ptr("https://a.example"), ClientID: ptr("a")}
	api.AdditionalOIDCConfig = &[]im.OIDCConfig{
		{IssuerURL: ptr("https://a.example"), ClientID: ptr("a")}, // the same provider again
		{IssuerURL: ptr("https://b.example"), ClientID: ptr("b")},
		{IssuerURL: ptr("https://c.example")}, // no client: no login possible
	}
	got := Providers(rt)
	want := []Provider{{"https://a.example", "a"}, {"https://b.example", "b"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Providers = %v, want %v", got, want)
	}
	if p := Providers(&im.Runtime{}); len(p) != 0 {
		t.Errorf("a Runtime without OIDC has providers %v", p)
	}
}

func TestBuildOneUserPerProvider(t *testing.T) {
	ep := runtimeclient.Endpoint{Server: "https://api.c1.example", CAData: []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")}
	out, err := Build("c1", ep, []Provider{{"https://a.example", "a"}, {"https://b.example", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatalf("kubectl could not read it: %v\n%s", err, out)
	}
	if c := cfg.Clusters["c1"]; c == nil || c.Server != ep.Server || string(c.CertificateAuthorityData) != string(ep.CAData) {
		t.Fatalf("cluster c1 = %+v", cfg.Clusters["c1"])
	}
	if cfg.CurrentContext != "c1" || len(cfg.AuthInfos) != 2 || len(cfg.Contexts) != 2 {
		t.Fatalf("current %q, users %d, contexts %d; want c1, 2, 2\n%s", cfg.CurrentContext, len(cfg.AuthInfos), len(cfg.Contexts), out)
	}
	second := cfg.AuthInfos["c1-2"]
	if second == nil || second.Exec == nil || second.Exec.Command != Plugin {
		t.Fatalf("user c1-2 = %+v", second)
	}
	args := strings.Join(second.Exec.Args, " ")
	if args != "get-token --oidc-issuer-url=https://b.example --oidc-client-id=b --oidc-extra-scope=email --oidc-extra-scope=openid" {
		t.Errorf("user c1-2 runs %s", args)
	}
	if ctx := cfg.Contexts["c1-2"]; ctx == nil || ctx.AuthInfo != "c1-2" || ctx.Cluster != "c1" {
		t.Errorf("context c1-2 = %+v", ctx)
	}
}

func TestBuildWithoutProvidersHasNoUsers(t *testing.T) {
	out, err := Build("c1", runtimeclient.Endpoint{Server: "https://api.c1.example"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.AuthInfos) != 0 || cfg.Contexts["c1"] == nil || cfg.Contexts["c1"].Cluster != "c1" {
		t.Errorf("users %v, contexts %v", cfg.AuthInfos, cfg.Contexts)
	}
}
