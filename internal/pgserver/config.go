package pgserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// confFileName holds the settings keb owns. It is rewritten on every start
// and included from postgresql.conf, so that `pg_ctl start` by hand behaves
// like keb's start, while ALTER SYSTEM (postgresql.auto.conf, read last)
// still overrides it.
const confFileName = "keb.conf"

const includeLine = "include_if_exists = '" + confFileName + "'"

// writeConfig writes keb.conf and makes sure postgresql.conf includes it.
func writeConfig(r *runner, dataDir string, throwaway bool, settings []string) error {
	var b strings.Builder
	b.WriteString("# Written by keb on every start; edits are lost. Use ALTER SYSTEM to override.\n")
	// Only local TCP: with trust authentication anything that can connect
	// is a superuser, so neither other hosts nor other local users (through
	// a shared socket directory) may reach the server.
	b.WriteString("listen_addresses = '127.0.0.1'\n")
	b.WriteString("unix_socket_directories = ''\n")
	// Tests open many pools at once, one per test database.
	b.WriteString("max_connections = 200\n")
	if throwaway {
		// A throwaway cluster is deleted after the run, so crash safety buys
		// nothing and costs seconds of fsync across a test suite.
		b.WriteString("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
	}
	// Later lines win: the caller's settings override the ones above.
	for _, line := range settings {
		b.WriteString(line + "\n")
	}
	// Renamed into place: a postmaster someone else is starting by hand in
	// the data directory never reads a half-written file.
	path := filepath.Join(dataDir, confFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", confFileName, err)
	}
	if err := r.chown(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", confFileName, err)
	}

	mainConf := filepath.Join(dataDir, "postgresql.conf")
	cur, err := os.ReadFile(mainConf)
	if err != nil {
		return fmt.Errorf("reading postgresql.conf: %w", err)
	}
	for _, line := range bytes.Split(cur, []byte("\n")) {
		if string(bytes.TrimSpace(line)) == includeLine {
			return nil
		}
	}
	// Appended at the end so that it overrides initdb's defaults above it.
	f, err := os.OpenFile(mainConf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening postgresql.conf: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Settings managed by keb.\n%s\n", includeLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("adding keb.conf to postgresql.conf: %w", err)
	}
	return nil
}
