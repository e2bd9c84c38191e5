package userkubeconfig

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// FuzzBuild: whatever a Runtime CR's OIDC providers hold (KIM validates
// them, keb does not rely on it), the kubeconfig is one kubectl reads, with
// each provider's issuer and client ID as one argument each, never more.
func FuzzBuild(f *testing.F) {
	f.Add("c1", "https://a.example", "a", "https://b.example", "b")
	f.Add("c-1", "https://a.example/x?y=1#z", "a b", "https://a.example\n--exec=x", "\"'\x00")
	f.Fuzz(func(t *testing.T, name, issuer1, client1, issuer2, client2 string) {
		if name == "" {
			return // an instance always has a name (DisplayName falls back to the runtime ID)
		}
		for _, s := range []string{issuer1, client1, issuer2, client2} {
			if !utf8.ValidString(s) {
				return // decoded from the API server's JSON: always UTF-8
			}
		}
		providers := []Provider{{issuer1, client1}, {issuer2, client2}}
		out, err := Build(name, runtimeclient.Endpoint{Server: "https://api.example"}, providers)
		if err != nil {
			return // refused to encode, nothing served
		}
		name = strings.ToValidUTF8(name, "-")
		cfg, err := clientcmd.Load(out)
		if err != nil {
			t.Fatalf("kubectl cannot read it: %v\n%s", err, out)
		}
		if cfg.Clusters[name] == nil || cfg.Clusters[name].Server != "https://api.example" || cfg.CurrentContext != name {
			t.Fatalf("cluster %q: %+v", name, cfg.Clusters)
		}
		users := 0
		for _, u := range cfg.AuthInfos {
			users++
			args := u.Exec.Args
			if len(args) != 5 || u.Exec.Command != Plugin {
				t.Fatalf("user runs %s %q", u.Exec.Command, args)
			}
			if !slices.Contains(args, "--oidc-issuer-url="+issuer1) && !slices.Contains(args, "--oidc-issuer-url="+issuer2) {
				t.Fatalf("args %q name neither issuer", args)
			}
		}
		if users != 2 && !(users == 1 && name+"-2" == name) {
			t.Fatalf("%d users for 2 providers", users)
		}
	})
}
