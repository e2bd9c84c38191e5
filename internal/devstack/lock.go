package devstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file a running `keb dev` holds locked in its directory.
const LockFile = "dev.lock"

// ErrRunning is returned when another `keb dev` holds the directory.
var ErrRunning = errors.New("another keb dev is running in this directory")

// holder is what the lock file says about the `keb dev` holding it.
type holder struct {
	PID    int    `json:"pid"`
	Listen string `json:"listen"`
}

// lockDir makes the calling process the one `keb dev` of dir: two on one
// directory would share its PostgreSQL and fight over its etcd's data (the
// second used to wait minutes for an etcd that could never start). The lock
// is an flock, so the kernel drops it with a process that dies holding it:
// a killed run leaves nothing to clear by hand. The file says who holds it,
// so that the refusal can name the running one.
func lockDir(dir, listen string) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the dev lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		var h holder
		if b, rerr := io.ReadAll(f); rerr == nil && json.Unmarshal(b, &h) == nil && h.PID > 0 {
			return nil, fmt.Errorf("%w (PID %d, listening on %s): stop it first, or give this one another --dir", ErrRunning, h.PID, h.Listen)
		}
		return nil, fmt.Errorf("%w (it is starting): stop it first, or give this one another --dir", ErrRunning)
	}
	b, _ := json.Marshal(holder{PID: os.Getpid(), Listen: listen})
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the dev lock: %w", err)
	}
	// The contents go with the run; closing the file releases the lock.
	return func() { _ = f.Truncate(0); f.Close() }, nil
}
