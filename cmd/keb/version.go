package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/kyma-keb/keb/internal/buildinfo"
)

// versionCommand prints what GET /version answers: the version, the commit
// and the database schema version this keb needs.
func versionCommand(*flag.FlagSet) func(ctx context.Context, args []string) error {
	return func(context.Context, []string) error {
		info := buildinfo.Read()
		modified := ""
		if info.Modified {
			modified = " (with uncommitted changes)"
		}
		fmt.Printf("%s\ncommit %s%s\nschema version %d\n%s\n", info.Version, info.Commit, modified, info.SchemaVersion, info.GoVersion)
		return nil
	}
}
