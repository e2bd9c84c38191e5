// Package buildinfo says which keb this is: its release version, the commit
// it was built from and the database schema version it needs (GET /version,
// `keb version`).
package buildinfo

import (
	"io/fs"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/kyma-keb/keb/migrations"
)

// Version is the release version; `keb` sets it from its -X main.version.
var Version = "dev"

// Commit is the commit built, set with -X (make and the Dockerfile do: the
// builds run with -buildvcs=false or without .git); empty: what Go
// recorded, if anything.
var Commit = ""

// Info is what GET /version answers.
type Info struct {
	Version string `json:"version"`
	// Commit is the commit built (-X …/buildinfo.Commit, else the VCS
	// revision Go recorded); "unknown" when neither says.
	Commit string `json:"commit"`
	// Modified says the checkout had uncommitted changes.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	// SchemaVersion is the newest database migration this keb carries: the
	// schema it needs (`keb migrate up` applies it).
	SchemaVersion int64 `json:"schemaVersion"`
}

// Read returns the build's Info.
func Read() Info {
	info := Info{Version: Version, Commit: "unknown", SchemaVersion: schemaHead()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if Commit != "" {
		info.Commit = Commit
	}
	return info
}

// schemaHead is the number of the newest embedded migration (NNNNN_name.sql).
func schemaHead() int64 {
	names, _ := fs.Glob(migrations.FS, "*.sql") // a constant pattern: never fails
	var versions []int64
	for _, n := range names {
		if v, err := strconv.ParseInt(strings.SplitN(n, "_", 2)[0], 10, 64); err == nil {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return 0
	}
	return slices.Max(versions)
}
