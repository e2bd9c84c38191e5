package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/simstack"
)

// simProcess is the `keb sim` child of `keb dev`: the stand-ins, a process
// of their own as in a landscape, so that keb's CPU is keb's alone.
type simProcess struct {
	cmd    *exec.Cmd
	exited chan error
}

// startSim starts `keb sim` (this executable) against the control plane
// of kubeconfig with opts' simulation settings and cfg's settings the
// stand-ins must agree with, and waits until its stand-ins answer. The
// stand-ins whose service cfg names for real stay out. It dies with keb dev:
// SIGTERM on keb dev's death, and keb dev's watchdog (procguard) stops it
// with keb dev's other descendants even after a SIGKILL.
func startSim(ctx context.Context, opts Options, cfg *config.Config, kubeconfig string) (*simProcess, simstack.Settings, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("finding keb's executable for keb sim: %w", err)
	}
	dir := filepath.Join(opts.Dir, "sim")
	b := strconv.FormatBool
	args := []string{"sim", "--kcp-kubeconfig", kubeconfig, "--dir", dir, "--guard=false", "--host", cfg.Host,
		"--k8s-bin-dir", opts.K8sBinDir, "--runtime-delay", opts.RuntimeDelay.String(), "--runtime-mode", string(opts.RuntimeMode),
		"--runtime-faults", opts.RuntimeFaults, "--account-cleanup-delay", opts.AccountCleanupDelay.String(),
		"--lifecycle-manager=" + b(!opts.NoLifecycleManager),
		"--avs-stand-in=" + b(!opts.NoAVS && !cfg.AVS.Configured()), "--edp-stand-in=" + b(!opts.NoEDP && cfg.EDP.AdminURL == ""),
		"--ias-stand-in=" + b(!opts.NoIAS && cfg.IAS.URL == ""), "--lms-stand-in=" + b(!opts.NoLMS && cfg.LMS.URL == ""), "--director-stand-in=" + b(!opts.NoDirector && !cfg.Director.Configured()),
		"--gardener-project", cfg.Engine.GardenerProject, "--hap-pool-kind", cfg.Engine.HAP.PoolKind,
		"--shoot-domain", cfg.Engine.ShootDomain, "--edp-namespace", cfg.EDP.Namespace,
		"--log-format", cfg.LogFormat, "--log-level", cfg.LogLevel}
	settingsPath := filepath.Join(dir, simstack.SettingsFile)
	// What an earlier, killed keb dev left would name stand-ins that are gone.
	if err := os.Remove(settingsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	cmd := exec.Command(exe, args...)
	// Its log is keb dev's: one stream to read, as before the move.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting keb sim: %w", err)
	}
	p := &simProcess{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	// A bound against a hang, not a timing claim: it starts in well under a second.
	hang := time.After(2 * time.Minute)
	for {
		select {
		case err := <-p.exited:
			p.exited <- err
			return nil, nil, fmt.Errorf("keb sim exited while starting (%v); its log is above", err)
		case <-ctx.Done():
			p.stop()
			return nil, nil, ctx.Err()
		case <-hang:
			p.stop()
			return nil, nil, errors.New("keb sim did not start its stand-ins within 2 minutes; its log is above")
		case <-tick.C:
		}
		s, err := simstack.ReadSettings(settingsPath)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			p.stop()
			return nil, nil, err
		}
		return p, s, nil
	}
}

// pid is the stand-ins' process ID (the bench measures its CPU apart from keb's).
func (p *simProcess) pid() int { return p.cmd.Process.Pid }

// stop asks keb sim to stop its stand-ins and clusters, and kills it after
// half a minute.
func (p *simProcess) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("keb sim did not stop within 30 s of SIGTERM: killed")
	}
}
