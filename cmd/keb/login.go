package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/kyma-keb/keb/internal/config"
)

// loginConfig is what `keb login` keeps (file mode 0600) for the operator
// commands: the broker's URL and either a token or the OAuth2 client that
// gets one for each call (with the scopes the call needs), as kubectl's and
// upstream kcp CLI's config files do.
type loginConfig struct {
	URL          string `json:"url"`
	Token        string `json:"token,omitempty"`
	TokenURL     string `json:"tokenURL,omitempty"`
	ClientID     string `json:"clientID,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
}

// loginConfigPath is $KEB_CONFIG, else keb/config.json in the user's config
// directory ($XDG_CONFIG_HOME or ~/.config).
func loginConfigPath() (string, error) {
	if p := os.Getenv("KEB_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for keb login (set KEB_CONFIG): %w", err)
	}
	return filepath.Join(dir, "keb", "config.json"), nil
}

// readLoginConfig returns the saved login, or ok=false when there is none.
func readLoginConfig() (c loginConfig, ok bool, err error) {
	path, err := loginConfigPath()
	if err != nil {
		return c, false, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("reading keb login's %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, false, fmt.Errorf("keb login's %s does not parse (run keb login again, or keb logout): %w", path, err)
	}
	return c, true, nil
}

// token returns the saved token, or one from the saved client with scopes.
func (c loginConfig) token(ctx context.Context, scopes []string) (string, error) {
	if c.Token != "" {
		return c.Token, nil
	}
	cc := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.TokenURL, Scopes: scopes}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tok, err := cc.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("getting a token from %s for client %s (keb login): %w", c.TokenURL, c.ClientID, err)
	}
	return tok.AccessToken, nil
}

func loginCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindLogin(fs, os.Stdout)
}

// bindLogin registers the flags of `keb login --url URL (--token T | --token-url U --client-id I --client-secret S)`.
func bindLogin(fs *flag.FlagSet, out io.Writer) func(ctx context.Context, args []string) error {
	var c loginConfig
	var secretFile string
	b := config.NewBinder(fs)
	b.String(&c.URL, "url", "KEB_URL", "", "base URL of the broker (required)")
	b.String(&c.Token, "token", "KEB_TOKEN", "", "a bearer token to keep (pasted from your identity provider); or use an OAuth2 client")
	b.String(&c.TokenURL, "token-url", "KEB_TOKEN_URL", "", "OAuth2 token endpoint of the client credentials grant")
	b.String(&c.ClientID, "client-id", "KEB_CLIENT_ID", "", "OAuth2 client ID")
	b.String(&c.ClientSecret, "client-secret", "KEB_CLIENT_SECRET", "", "OAuth2 client secret (or --client-secret-file)")
	b.String(&secretFile, "client-secret-file", "KEB_CLIENT_SECRET_FILE", "", "file holding the OAuth2 client secret")
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		if secretFile != "" {
			raw, err := os.ReadFile(secretFile)
			if err != nil {
				return fmt.Errorf("--client-secret-file: %w", err)
			}
			c.ClientSecret = strings.TrimSpace(string(raw))
		}
		u, err := url.Parse(c.URL)
		if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--url %q: want the broker's base URL, e.g. https://keb.example.com", c.URL)
		}
		c.URL = strings.TrimRight(c.URL, "/")
		client := c.TokenURL != "" || c.ClientID != "" || c.ClientSecret != ""
		switch {
		case c.Token != "" && client:
			return errors.New("give either --token or an OAuth2 client (--token-url, --client-id, --client-secret), not both")
		case c.Token == "" && !client:
			return errors.New("give --token, or an OAuth2 client: --token-url, --client-id and --client-secret")
		case client && (c.TokenURL == "" || c.ClientID == "" || c.ClientSecret == ""):
			return errors.New("an OAuth2 client needs --token-url, --client-id and --client-secret")
		}
		// A login that cannot get a token or reach the broker is refused
		// now rather than on the next command.
		if _, err := c.token(ctx, nil); err != nil {
			return err
		}
		if err := reachable(ctx, c.URL); err != nil {
			return err
		}
		path, err := loginConfigPath()
		if err != nil {
			return err
		}
		raw, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := writePrivate(path, append(raw, '\n')); err != nil {
			return err
		}
		how := "the token"
		if client {
			how = "client " + c.ClientID + " (a token per call from " + c.TokenURL + ")"
		}
		fmt.Fprintf(out, "logged in to %s with %s; saved in %s\n", c.URL, how, path)
		return nil
	}
}

// reachable checks that url answers GET /version as keb does.
func reachable(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the broker at %s does not answer: %w", base, err)
	}
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v) != nil || v.Version == "" {
		return fmt.Errorf("%s/version answered %s, not keb's version: is --url keb's base URL?", base, resp.Status)
	}
	return nil
}

// writePrivate writes a file only its owner can read, replacing it whole.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func logoutCommand(*flag.FlagSet) func(ctx context.Context, args []string) error {
	return func(context.Context, []string) error {
		path, err := loginConfigPath()
		if err != nil {
			return err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fmt.Printf("logged out: %s removed; the commands use the running keb dev again\n", path)
		return nil
	}
}
