package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// updateGolden rewrites the golden files under testdata from the outputs the
// tests produce: go test ./cmd/keb -run TestPool -update-golden.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata's golden files from this run's outputs")

// golden compares got with testdata/name, or writes it there with
// -update-golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-golden)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update-golden rewrites it after a wanted change):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
