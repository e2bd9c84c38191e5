package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// startLockTimeout bounds the wait for another process's Start on the same
// data directory: its initdb and its server's start, each bounded by
// startTimeout.
const startLockTimeout = 3 * startTimeout

// lockDataDir serialises Start on dataDir across processes (two `keb dev`, a
// `keb dev` and a test binary): whoever holds the lock creates the cluster and
// starts the server, and the next one finds it ready and reuses it, instead of
// seeing a postmaster.pid whose server does not listen yet. The lock is an
// flock on the directory itself, so the kernel drops it with a process that
// dies holding it, and nothing is written into a directory initdb needs empty.
func lockDataDir(ctx context.Context, dataDir string, log logrus.FieldLogger) (unlock func(), err error) {
	f, err := os.Open(dataDir)
	if err != nil {
		return nil, fmt.Errorf("opening data directory to lock it: %w", err)
	}
	deadline := time.Now().Add(startLockTimeout)
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking data directory %s: %w", dataDir, err)
		}
		if !waiting {
			log.Infof("another process is starting PostgreSQL in the data directory; waiting for it")
			waiting = true
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another process has been starting PostgreSQL in %s for over %s", dataDir, startLockTimeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another process starting PostgreSQL in %s: %w", dataDir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Closing the file releases the lock.
	return func() { f.Close() }, nil
}
