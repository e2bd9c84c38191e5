package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// BinDirEnv names the environment variable that points FindBinaries at a
// specific directory, for machines where the binaries live somewhere odd or
// where several major versions are installed.
const BinDirEnv = "KEB_PG_BIN_DIR"

// debianRoot is where Debian and Ubuntu install one directory per major version.
const debianRoot = "/usr/lib/postgresql"

// ErrNoBinaries is returned (possibly wrapped) when no PostgreSQL server
// binaries are installed. Its text names the fix because it is what a
// developer sees on a fresh machine.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found (looked in $" + BinDirEnv +
	", " + debianRoot + "/*/bin and PATH): install them with `sudo apt-get install -y postgresql` or set DATABASE_URL")

// serverPrograms are the programs a cluster needs; pg_ctl finds postgres next
// to itself, so all three must share a directory.
var serverPrograms = []string{"initdb", "pg_ctl", "postgres"}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres:
// $KEB_PG_BIN_DIR if set, else the newest /usr/lib/postgresql/<ver>/bin, else
// the directory of pg_ctl on PATH.
func FindBinaries() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		// An explicit choice is never second-guessed: falling back to another
		// version would hide the misconfiguration.
		if err := checkBinDir(dir); err != nil {
			return "", fmt.Errorf("%s=%s: %v: %w", BinDirEnv, dir, err, ErrNoBinaries)
		}
		return dir, nil
	}
	if dirs := debianBinDirs(); len(dirs) > 0 {
		return dirs[0], nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		candidates := []string{filepath.Dir(p)}
		// Homebrew and friends put symlinks on PATH; the real directory is
		// the one that is sure to hold initdb and postgres too.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		for _, dir := range candidates {
			if checkBinDir(dir) == nil {
				return dir, nil
			}
		}
	}
	return "", ErrNoBinaries
}

// binDirFor picks the binaries for a data directory. An existing cluster can
// only be run by its own major version, so when Debian's layout has that
// version it wins over the newest one (e.g. after installing a newer
// PostgreSQL next to the one that created .keb/pgdata).
func binDirFor(dataDir string) (string, error) {
	if os.Getenv(BinDirEnv) == "" {
		if ver, err := clusterVersion(dataDir); err == nil {
			dir := filepath.Join(debianRoot, ver, "bin")
			if checkBinDir(dir) == nil {
				return dir, nil
			}
		}
	}
	return FindBinaries()
}

// checkBinDir reports which server program dir lacks, if any.
func checkBinDir(dir string) error {
	for _, prog := range serverPrograms {
		st, err := os.Stat(filepath.Join(dir, prog))
		if err != nil {
			return fmt.Errorf("no %s", prog)
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", prog)
		}
	}
	return nil
}

// debianBinDirs lists /usr/lib/postgresql/<ver>/bin directories that hold the
// server programs, newest version first.
func debianBinDirs() []string {
	entries, err := os.ReadDir(debianRoot)
	if err != nil {
		return nil
	}
	type cand struct {
		ver []int
		dir string
	}
	var cands []cand
	for _, e := range entries {
		ver, ok := parseVersion(e.Name())
		dir := filepath.Join(debianRoot, e.Name(), "bin")
		if ok && checkBinDir(dir) == nil {
			cands = append(cands, cand{ver, dir})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return versionLess(cands[j].ver, cands[i].ver) })
	dirs := make([]string, len(cands))
	for i, c := range cands {
		dirs[i] = c.dir
	}
	return dirs
}

// parseVersion turns "15" or "9.6" into its numeric parts.
func parseVersion(s string) ([]int, bool) {
	var ver []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, false
		}
		ver = append(ver, n)
	}
	return ver, len(ver) > 0
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// clusterVersion reads the major version a data directory was created by.
func clusterVersion(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

var versionRe = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// binariesVersion returns the major version of the binaries in the same form
// as PG_VERSION ("15", or "9.6" before PostgreSQL 10).
func binariesVersion(ctx context.Context, r *runner) (string, error) {
	out, err := r.command(ctx, "pg_ctl", "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("running pg_ctl --version: %w: %s", err, strings.TrimSpace(string(out)))
	}
	m := versionRe.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("unexpected pg_ctl --version output %q", strings.TrimSpace(string(out)))
	}
	if major, _ := strconv.Atoi(m[1]); major < 10 && m[2] != "" {
		return m[1] + "." + m[2], nil
	}
	return m[1], nil
}
