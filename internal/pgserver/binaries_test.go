package pgserver

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinariesHonoursEnv(t *testing.T) {
	t.Setenv(BinDirEnv, "")
	found, err := FindBinaries()
	if err != nil {
		t.Fatalf("FindBinaries on a machine with PostgreSQL: %v", err)
	}
	if err := checkBinDir(found); err != nil {
		t.Fatalf("FindBinaries returned %s: %v", found, err)
	}

	t.Setenv(BinDirEnv, found)
	got, err := FindBinaries()
	if err != nil || got != found {
		t.Fatalf("with %s=%s: got %q, %v", BinDirEnv, found, got, err)
	}

	empty := t.TempDir()
	t.Setenv(BinDirEnv, empty)
	_, err = FindBinaries()
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("with %s pointing at an empty dir: want ErrNoBinaries, got %v", BinDirEnv, err)
	}
	if !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("error should name the directory and the fix: %v", err)
	}
}

func TestBinDirForPrefersClusterVersion(t *testing.T) {
	t.Setenv(BinDirEnv, "")
	dirs := debianBinDirs()
	if len(dirs) == 0 {
		t.Fatal("no " + debianRoot + "/*/bin on this machine")
	}
	oldest := dirs[len(dirs)-1]
	ver := filepath.Base(filepath.Dir(oldest))
	dataDir := t.TempDir()
	writeFile(t, filepath.Join(dataDir, "PG_VERSION"), ver+"\n")
	got, err := binDirFor(dataDir)
	if err != nil || got != oldest {
		t.Fatalf("binDirFor(cluster of %s) = %q, %v; want %s", ver, got, err, oldest)
	}
}

func TestParseVersionOrder(t *testing.T) {
	a, _ := parseVersion("9.6")
	b, _ := parseVersion("10")
	c, _ := parseVersion("15")
	if !versionLess(a, b) || !versionLess(b, c) || versionLess(c, a) {
		t.Fatal("version ordering is wrong")
	}
	if _, ok := parseVersion("main"); ok {
		t.Fatal(`"main" parsed as a version`)
	}
}
