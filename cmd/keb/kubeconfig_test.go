package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A runtime without an OIDC provider has a kubeconfig nobody can log in
// with: keb kubeconfig says so, points at a binding and writes nothing,
// while a kubeconfig with a user is printed or written as served.
func TestKubeconfigWithoutUserIsRefused(t *testing.T) {
	const withUser = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://api.example\nusers:\n- name: u\n  user:\n    exec:\n      command: kubectl-oidc_login\n"
	const withoutUser = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://api.example\nusers: []\n"
	for _, tc := range []struct {
		name, kubeconfig string
		wantErr          string
	}{
		{"with a user", withUser, ""},
		{"without a user", withoutUser, "has no user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/info/runtimes":
					fmt.Fprint(w, `{"data":[{"instanceID":"i-1","runtimeID":"r-1"}],"count":1,"totalCount":1}`)
				case r.URL.Path == "/kubeconfig/i-1":
					fmt.Fprint(w, tc.kubeconfig)
				default:
					http.NotFound(w, r)
				}
			}))
			defer broker.Close()
			file := filepath.Join(t.TempDir(), "kubeconfig")
			for _, output := range []string{"", file} {
				fs := flag.NewFlagSet("kubeconfig", flag.ContinueOnError)
				var stdout, stderr bytes.Buffer
				runFn := bindKubeconfig(fs, &stdout, &stderr)
				args := []string{"--url", broker.URL, "--token", "t", "-i", "i-1"}
				if output != "" {
					args = append(args, "-o", output)
				}
				if err := fs.Parse(args); err != nil {
					t.Fatal(err)
				}
				err := runFn(context.Background(), nil)
				_, statErr := os.Stat(file)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("-o %q: %v", output, err)
				case tc.wantErr == "" && output == "" && stdout.String() != tc.kubeconfig:
					t.Errorf("printed %q, want %q", stdout.String(), tc.kubeconfig)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "binding")):
					t.Errorf("-o %q: error %v, want one saying %q and pointing at a binding", output, err, tc.wantErr)
				case tc.wantErr != "" && (stdout.Len() > 0 || statErr == nil):
					t.Errorf("-o %q: a kubeconfig without a user was printed (%q) or written (%v)", output, stdout.String(), statErr)
				}
			}
		})
	}
}
