package app_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/app"
)

// TestDeployingDocRBAC keeps docs/deploying.md's RBAC table equal to app.KubernetesAccess (which the chart's
// RBAC equals, see testing/e2e): the same rows, each with the same verbs.
func TestDeployingDocRBAC(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(scope, group, resource string, verbs []string) string {
		return scope + " " + group + "/" + resource + ": " + strings.Join(verbs, ", ")
	}
	var documented []string
	for _, l := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.TrimSpace(l), "|")
		if len(cells) != 7 {
			continue
		}
		scope := strings.TrimSpace(cells[1])
		if scope != app.ScopeControl && scope != app.ScopePool {
			continue
		}
		group := strings.Trim(strings.TrimSpace(cells[2]), "`")
		if group == "core" {
			group = ""
		}
		verbs := strings.Split(strings.TrimSpace(cells[4]), ", ")
		documented = append(documented, row(scope, group, strings.Trim(strings.TrimSpace(cells[3]), "`"), verbs))
	}
	if len(documented) == 0 {
		t.Fatal("docs/deploying.md has no RBAC table (rows | control or pool | group | resource | verbs | for |)")
	}
	var code []string
	for _, a := range app.KubernetesAccess {
		code = append(code, row(a.Scope, a.Group, a.Resource, a.Verbs))
	}
	for _, r := range code {
		if !slices.Contains(documented, r) {
			t.Errorf("docs/deploying.md's RBAC table lacks %q (internal/app/access.go)", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(code, r) {
			t.Errorf("docs/deploying.md's RBAC table has %q, which internal/app/access.go does not grant", r)
		}
	}
}
