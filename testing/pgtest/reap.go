package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/pgserver"
)

// reapAbandoned stops the servers and removes the temp dirs of earlier test
// binaries that died without cleaning up: `go test -timeout` panics and
// Ctrl-C skip Main's cleanup, and pg_ctl detaches the server from us, so
// without this every such run would leave a postgres running for good.
func reapAbandoned(ctx context.Context, log logrus.FieldLogger) {
	var dirs []string
	for _, root := range []string{os.TempDir(), ramDisk} {
		found, _ := filepath.Glob(filepath.Join(root, tempPrefix+"*"))
		dirs = append(dirs, found...)
	}
	for _, dir := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), tempPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || processExists(pid) {
			continue
		}
		if err := pgserver.StopDataDir(ctx, filepath.Join(dir, "pgdata"), log); err != nil {
			log.WithError(err).Warnf("pgtest: could not stop the server abandoned in %s", dir)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			log.WithError(err).Warnf("pgtest: could not remove abandoned %s", dir)
			continue
		}
		log.Infof("pgtest: removed %s, abandoned by test process %d", dir, pid)
	}
}

func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
