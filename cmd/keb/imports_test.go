package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTestCodeInTheBinary holds the layout rule that keeps test code out of
// what ships: no package outside testing/ imports testing/... (its _test.go
// files may; `go list`'s Imports leaves them out), and the keb binary links
// neither keb's testing/ packages nor Go's testing package.
func TestNoTestCodeInTheBinary(t *testing.T) {
	const module = "github.com/kyma-keb/keb/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		packages++
		if strings.HasPrefix(pkg, module+"testing/") {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"testing/") {
				t.Errorf("%s imports %s: only testing/ packages and _test.go files may", pkg, imp)
			}
		}
	}
	if packages < 20 {
		t.Fatalf("go list named %d packages; expected the whole module:\n%s", packages, out)
	}

	deps, err := exec.Command("go", "list", "-deps", module+"cmd/keb").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	for _, dep := range strings.Fields(string(deps)) {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || strings.HasPrefix(dep, module+"testing/") {
			t.Errorf("the keb binary links %s", dep)
		}
	}
}
