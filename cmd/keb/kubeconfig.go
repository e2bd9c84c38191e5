package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
)

// kubeconfigFilters are the selectors of `keb kubeconfig`, those of
// `keb runtimes` that name one runtime (upstream kcp CLI's short names).
var kubeconfigFilters = []string{"account", "subaccount", "runtime-id", "shoot", "instance-id"}

func kubeconfigCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindKubeconfig(fs, os.Stdout, os.Stderr)
}

// bindKubeconfig registers the flags of `keb kubeconfig` and returns the
// function that finds the one runtime the filters name and prints (or
// writes) its people's kubeconfig.
func bindKubeconfig(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, args []string) error {
	var base, token, dir, output string
	query := url.Values{}
	b := config.NewBinder(fs)
	b.String(&base, "url", "KEB_URL", "", "base URL of the broker (default: keb login's, else the running keb dev's, from <dir>/url, else http://127.0.0.1:8080)")
	b.String(&token, "token", "KEB_TOKEN", "", "bearer token with scopes cld:read and kubeconfig:read (default: keb login's, else one minted with the dev key in --dir)")
	b.String(&dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev (for the default URL and token)")
	b.String(&output, "o", "KEB_KUBECONFIG_OUTPUT", "", "write the kubeconfig to this file (mode 0600) instead of printing it")
	for _, f := range runtimesFilters {
		for _, name := range kubeconfigFilters {
			if f.flag == name {
				bindRepeatable(fs, query, f.param, f.flag, f.short, f.env, "the runtime with this "+f.help)
			}
		}
	}
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q (name the runtime with -g/-s/-r/-c/-i)", args)
		}
		if len(query) == 0 {
			return errors.New("name the runtime with -g (global account), -s (subaccount), -r (runtime ID), -c (shoot) or -i (instance ID)")
		}
		if base == "" {
			base = devURL(dir)
		}
		base = strings.TrimRight(base, "/")
		u, err := url.Parse(base + "/info/runtimes")
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("bad --url %q: want e.g. http://127.0.0.1:8080", base)
		}
		if token == "" {
			if token, err = devTokenWith(dir, auth.ScopeCLDRead, auth.ScopeKubeconfigRead); err != nil {
				return err
			}
		}
		client := &http.Client{Timeout: 30 * time.Second}
		query.Set("state", "all")
		page, err := fetchPages(ctx, client, *u, token, query, 2, false)
		if err != nil {
			return err
		}
		switch {
		case len(page.Data) == 0:
			return errors.New("no runtime matches")
		case page.TotalCount > 1:
			return fmt.Errorf("%d runtimes match; name one (keb runtimes lists them)", page.TotalCount)
		}
		rt := page.Data[0]
		body, err := fetchKubeconfig(ctx, client, base+"/kubeconfig/"+url.PathEscape(rt.InstanceID), token)
		if err != nil {
			return fmt.Errorf("runtime %s (instance %s): %w", rt.RuntimeID, rt.InstanceID, err)
		}
		if err := requireUser(body); err != nil {
			return fmt.Errorf("runtime %s (instance %s): %w", rt.RuntimeID, rt.InstanceID, err)
		}
		if output == "" {
			_, err = stdout.Write(body)
			return err
		}
		if err := os.WriteFile(output, body, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote the kubeconfig of runtime %s (instance %s) to %s\n", rt.RuntimeID, rt.InstanceID, output)
		return nil
	}
}

// requireUser refuses a kubeconfig with no user: the runtime has no OIDC
// provider to log in with, and a file that cannot authenticate is worse than
// an error that says where an admin kubeconfig comes from.
func requireUser(kubeconfig []byte) error {
	var kc struct {
		Users []json.RawMessage `json:"users"`
	}
	if err := yaml.Unmarshal(kubeconfig, &kc); err != nil {
		return fmt.Errorf("the broker's kubeconfig does not parse: %w", err)
	}
	if len(kc.Users) == 0 {
		return errors.New("its kubeconfig has no user: the runtime has no OIDC provider to log in with. " +
			"Use a binding's kubeconfig instead (PUT /oauth/v2/service_instances/INSTANCE/service_bindings/ID), " +
			"or add an OIDC provider with an update of the instance's oidc parameter")
	}
	return nil
}

// fetchKubeconfig reads GET /kubeconfig/{id}; any answer but 200 is an
// error carrying the server's description.
func fetchKubeconfig(ctx context.Context, client *http.Client, u, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the broker answered %s: %s", resp.Status, describeError(body))
	}
	return body, nil
}
