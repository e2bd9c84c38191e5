package catalog

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateGoldens = flag.Bool("update", false, "rewrite testdata/schemas from the embedded plans file (make goldens)")

// goldenDir holds every plan's create and update schema as the catalog serves them, for a
// reviewer to read like upstream's golden schemas.
const goldenDir = "testdata/schemas"

// TestSchemaGoldens compares every plan's whole create and update schema, built from the
// embedded plans file, with the files under testdata/schemas: <plan>/create.json and update.json
// as the default platform region offers the plan, and <plan>/<platform region>/… for every
// platform region (other-platform-regions: those the plans file does not name) whose schemas
// differ from those. `go test ./internal/catalog -run TestSchemaGoldens -update` (make goldens)
// rewrites them; they are never edited by hand.
func TestSchemaGoldens(t *testing.T) {
	c := defaultCatalog(t)
	want := map[string][]byte{}
	for _, id := range sortedKeys(c.plans) {
		base, err := c.entryFor(id, DefaultPlatformRegion)
		if err != nil {
			t.Fatal(err)
		}
		name := base.plan.Name
		want[filepath.Join(name, "create.json")] = indentJSON(t, base.create.json)
		want[filepath.Join(name, "update.json")] = indentJSON(t, base.update.json)
		variants := map[string]*planEntry{}
		for _, pr := range c.CatalogRegions() {
			variants[pr] = c.regional[pr][id]
		}
		for _, class := range OtherRegionClasses() {
			if class == "" {
				class = "unknown"
			}
			variants["other-"+class+"-platform-regions"] = c.otherRegions[strings.TrimPrefix(class, "unknown")][id]
		}
		for _, dir := range sortedKeys(variants) {
			e := variants[dir]
			if e == nil {
				want[filepath.Join(name, dir, "not-offered")] = []byte("plan " + name + " has no region in this platform region\n")
				continue
			}
			if !bytes.Equal(e.create.json, base.create.json) {
				want[filepath.Join(name, dir, "create.json")] = indentJSON(t, e.create.json)
			}
			if !bytes.Equal(e.update.json, base.update.json) {
				want[filepath.Join(name, dir, "update.json")] = indentJSON(t, e.update.json)
			}
		}
	}

	if *updateGoldens {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		for path, b := range want {
			full := filepath.Join(goldenDir, path)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}

	have := map[string]bool{}
	err := filepath.WalkDir(goldenDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(goldenDir, path)
		have[rel] = true
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v (run make goldens)", goldenDir, err)
	}
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, err := os.ReadFile(filepath.Join(goldenDir, p))
		if err != nil {
			t.Errorf("%s: missing golden file (run make goldens): %v", p, err)
			continue
		}
		if !bytes.Equal(got, want[p]) {
			t.Errorf("%s: the schema differs from the golden file; if the change is meant, run make goldens and review the diff", p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: golden file of no schema any more (run make goldens)", p)
		}
	}
}

func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}
