package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/pgserver"
)

// server is where the test databases live.
type server struct {
	url    string // admin URL
	source string // for messages
	// disposable servers vanish with everything in them at stop, so their
	// databases need not be dropped one by one.
	disposable bool
	stop       func(context.Context) error
}

// tempPrefix names the temp dirs of local servers; the PID that follows lets
// a later run tell an abandoned dir from one in use (see reapAbandoned).
const tempPrefix = "keb-pgtest-"

// startServer returns the first server source that works, or an error
// listing why each one did not, one per line.
func startServer(ctx context.Context) (*server, error) {
	if url := os.Getenv(EnvURL); url != "" {
		// An explicit choice: falling back to another server would hide a
		// broken CI database.
		return &server{url: url, source: EnvURL, stop: func(context.Context) error { return nil }}, nil
	}
	reasons := []string{"no " + EnvURL}
	srv, err := localServer(ctx)
	if err == nil {
		return srv, nil
	}
	reasons = append(reasons, "PostgreSQL binaries: "+err.Error())
	srv, err = dockerServer(ctx)
	if err == nil {
		return srv, nil
	}
	reasons = append(reasons, "Docker: "+err.Error())
	return nil, errors.New(strings.Join(reasons, ";\n  "))
}

// localServer starts a throwaway cluster from the machine's binaries.
func localServer(ctx context.Context) (*server, error) {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		log.SetLevel(logrus.InfoLevel)
	}
	// Before anything else, so that a machine without binaries fails fast
	// and with pgserver's one-line fix.
	if _, err := pgserver.FindBinaries(); err != nil {
		return nil, err
	}
	reapAbandoned(ctx, log)

	dir, err := os.MkdirTemp(tempRoot(), fmt.Sprintf("%s%d-", tempPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("creating temp dir: %w", err)
	}
	pg, err := pgserver.Start(ctx, pgserver.Options{
		DataDir:   filepath.Join(dir, "pgdata"),
		Throwaway: true,
		Log:       log,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &server{
		url:        pg.URL,
		source:     "PostgreSQL from " + pg.DataDir,
		disposable: true,
		stop: func(ctx context.Context) error {
			if err := pg.Stop(ctx); err != nil {
				return err // keep the dir: the server may still be using it
			}
			return os.RemoveAll(dir)
		},
	}, nil
}

// ramDisk is where Linux offers a tmpfs to every user.
const ramDisk = "/dev/shm"

// minRAMDiskSpace keeps a small /dev/shm (64 MiB in a default Docker
// container) from filling up mid-run.
const minRAMDiskSpace = 1 << 30

// tempRoot picks where the throwaway cluster lives. Every NewPool creates a
// database of some 300 files; on a RAM disk that takes a tenth of the time
// it can take on a journaling file system (17ms against 230ms measured on
// ext4), so /dev/shm wins when it has room, unless TMPDIR says otherwise.
func tempRoot() string {
	if os.Getenv("TMPDIR") != "" {
		return os.TempDir()
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(ramDisk, &st); err == nil && st.Bavail*uint64(st.Bsize) >= minRAMDiskSpace {
		if f, err := os.CreateTemp(ramDisk, tempPrefix+"probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return ramDisk
		}
	}
	return os.TempDir()
}
