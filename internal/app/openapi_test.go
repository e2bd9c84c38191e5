package app_test

import (
	"context"
	"crypto"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/docs"
	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// devApp is a `keb dev` server's app without workers (it has every route, the token endpoint included) and
// its router.
func devApp(t *testing.T) (*app.App, *mux.Router) {
	t.Helper()
	key, err := auth.LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.DatabaseSecretKey = testSecretKey
	cfg.Engine.Workers = 0
	log := logrus.New()
	log.SetOutput(io.Discard)
	a, err := app.New(context.Background(), cfg, log, &app.DevOptions{PublicKeys: []crypto.PublicKey{key.Public()},
		TokenIssue: http.NotFoundHandler(), Mounts: map[string]http.Handler{devstack.CISPrefix + "/": http.NotFoundHandler()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	routed, ok := a.Handler.(interface{ Router() *mux.Router })
	if !ok {
		t.Fatalf("the app's handler is a %T, which exposes no router", a.Handler)
	}
	return a, routed.Router()
}

// TestEveryRouteDocumented walks the router of a `keb dev` server (which has
// every route, the token endpoint included) and compares it with
// docs/openapi.yaml both ways.
func TestEveryRouteDocumented(t *testing.T) {
	t.Parallel()
	a, router := devApp(t)
	documented := openAPIDoc(t).Operations()
	covered := map[string]bool{}
	anyMethod := []string{"GET", "PUT", "POST", "PATCH", "DELETE"}
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		methods, _ := route.GetMethods()
		if len(methods) == 0 {
			methods = anyMethod
		}
		if tmpl, err := route.GetPathTemplate(); err == nil {
			// A prefix route (operator endpoints still answering 501)
			// covers the documented paths below it.
			prefix := strings.HasSuffix(tmpl, "/")
			found := false
			for _, op := range documented {
				m, p, _ := strings.Cut(op, " ")
				if slices.Contains(methods, m) && (p == tmpl || prefix && strings.HasPrefix(p, tmpl)) {
					covered[op], found = true, true
				}
			}
			if !found {
				t.Errorf("route %v %s is not in docs/openapi.yaml", methods, tmpl)
			} else if !prefix {
				for _, m := range methods {
					if !slices.Contains(documented, m+" "+tmpl) {
						t.Errorf("route %s %s is not in docs/openapi.yaml", m, tmpl)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range documented {
		if !covered[op] {
			t.Errorf("docs/openapi.yaml documents %s, which the router does not serve", op)
		}
	}

	// The document is served as it is in the repository.
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(body) != string(docs.OpenAPI) || res.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET /openapi.yaml: %d %s, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(body))
	}
}
