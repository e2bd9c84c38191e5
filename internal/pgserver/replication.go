package pgserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/sirupsen/logrus"
)

// BaseBackup copies the cluster of the running server from into dataDir
// (pg_basebackup over the replication protocol, with the WAL needed to make
// the copy consistent). With standby the copy is set up to follow from as a
// streaming standby once started (-R: standby.signal and primary_conninfo);
// without it, it starts as a server of its own at the point of the backup,
// which is what a restore does. dataDir must be missing or empty.
func BaseBackup(ctx context.Context, from *Server, dataDir string, standby bool, log logrus.FieldLogger) error {
	if from == nil || from.runner == nil {
		return errors.New("base backup: no server to copy")
	}
	log = orDiscard(log)
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("resolving data directory: %w", err)
	}
	r, err := newRunner(from.runner.binDir, dataDir, log.WithField("data_dir", dataDir))
	if err != nil {
		return err
	}
	if err := r.prepareDataDir(dataDir); err != nil {
		return err
	}
	// -c fast: a checkpoint at once rather than spread over minutes.
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(from.Port), "-U", Superuser, "-D", dataDir,
		"-X", "stream", "-c", "fast", "--no-sync"}
	if standby {
		args = append(args, "-R")
	}
	if out, err := r.run(ctx, "pg_basebackup", args...); err != nil {
		return fmt.Errorf("pg_basebackup of 127.0.0.1:%d into %s: %w\n%s", from.Port, dataDir, err, lastLines(out, 20))
	}
	return nil
}

// StartStandby makes opts.DataDir a streaming standby of primary (a base
// backup of it, see BaseBackup) and starts it. pg_ctl returns once the
// standby accepts read-only connections.
func StartStandby(ctx context.Context, primary *Server, opts Options) (*Server, error) {
	if err := BaseBackup(ctx, primary, opts.DataDir, true, opts.Log); err != nil {
		return nil, err
	}
	if opts.BinDir == "" {
		opts.BinDir = primary.runner.binDir
	}
	return Start(ctx, opts)
}

// Promote turns a standby into a primary (pg_ctl promote) and returns once
// it accepts writes.
func (s *Server) Promote(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runner == nil {
		return errors.New("promote: the server was not started by this process")
	}
	if out, err := s.runner.run(ctx, "pg_ctl", "promote", "-w", "-t", strconv.Itoa(int(startTimeout.Seconds())),
		"-D", s.DataDir); err != nil {
		return fmt.Errorf("promoting the standby in %s: %w: %s", s.DataDir, err, out)
	}
	return nil
}
