package pgserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// portFileName remembers the port of a persistent cluster so that restarting
// `keb dev` keeps the same DATABASE_URL (and whatever a developer pointed
// psql or an IDE at).
const portFileName = "keb-port"

// choosePort returns the port to start on and whether it was picked by us
// (and may therefore be replaced if someone grabs it first).
func choosePort(dataDir string, opts Options) (port int, picked bool, err error) {
	if opts.Port != 0 {
		return opts.Port, false, nil
	}
	if !opts.Throwaway {
		if p, err := readPortFile(dataDir); err == nil && portFree(p) {
			return p, true, nil
		}
	}
	p, err := freePort()
	return p, true, err
}

func readPortFile(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, portFileName))
	if err != nil {
		return 0, err
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("%s holds no port: %q", portFileName, b)
	}
	return p, nil
}

func writePortFile(r *runner, dataDir string, port int) error {
	path := filepath.Join(dataDir, portFileName)
	if err := os.WriteFile(path, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return fmt.Errorf("remembering port: %w", err)
	}
	return r.chown(path)
}

// freePort asks the kernel for an unused port on 127.0.0.1. It is free only
// for now: Start retries with another one if the server loses the race.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
