// Package k8stest starts real kube-apiservers (with etcd) for tests, from the
// binaries `make` builds into bin/k8s, with keb's CRDs installed.
package k8stest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/resources"
)

// AssetsEnv names the directory with kube-apiserver and etcd; controller-runtime's envtest reads it too.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// BinDir returns the directory holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS, else <repo>/bin/k8s.
// It fails with the fix when the binaries are missing: tests never skip for want of them.
func BinDir() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make k8s-bins` (or `make test`, which builds them; the first build takes minutes)", bin, dir)
		}
	}
	return filepath.Abs(dir)
}

// modulePath is keb's module, as its go.mod names it.
const modulePath = "github.com/kyma-keb/keb"

// RepoRoot is the repository's top directory: the nearest directory at or
// above the working directory (a test's package directory) whose go.mod is
// keb's. Not from runtime.Caller: under -trimpath (make test) source file
// names are module paths, not places on disk.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if first, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(first) == "module "+modulePath {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s at or above the working directory: run the tests from keb's repository", modulePath)
		}
		dir = parent
	}
}

// CRDs returns keb's CustomResourceDefinitions from the embedded resources.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) { return resources.LoadCRDs() }

// Environment is one running kube-apiserver.
type Environment struct {
	Config *rest.Config
	env    *envtest.Environment
	// restarted are apiservers StopAPIServer's restart started.
	restarted []*os.Process
	// wrapper is the directory of the script that starts the apiserver with Options.APIServerEnv.
	wrapper string
}

// Start starts a kube-apiserver and etcd. crds selects which of keb's CRDs to install: nil installs all of them.
func Start(crds []*apiextensionsv1.CustomResourceDefinition) (*Environment, error) {
	return StartSized(crds, 0)
}

// StartSized is Start with etcd's backend quota raised to quotaBytes (0: etcd's default, 2 GiB), for a control
// plane filled with a fleet's objects: etcd refuses every write once its database reaches the quota.
func StartSized(crds []*apiextensionsv1.CustomResourceDefinition, quotaBytes int64) (*Environment, error) {
	return StartWith(crds, Options{EtcdQuota: quotaBytes})
}

// Options tune the control plane StartWith starts, for a fleet-sized one (testing/scaleload).
type Options struct {
	// EtcdQuota is etcd's backend quota in bytes (0: etcd's default, 2 GiB).
	EtcdQuota int64
	// APIServerArgs are kube-apiserver flags without the leading dashes (e.g. "request-timeout": "5m"),
	// set over envtest's defaults.
	APIServerArgs map[string]string
	// APIServerEnv is NAME=value settings of the kube-apiserver's own environment (e.g. GOMEMLIMIT), which
	// neither etcd nor this process's other children get.
	APIServerEnv []string
}

// StartWith is Start with the control plane tuned by o.
func StartWith(crds []*apiextensionsv1.CustomResourceDefinition, o Options) (*Environment, error) {
	dir, err := BinDir()
	if err != nil {
		return nil, err
	}
	if crds == nil {
		if crds, err = CRDs(); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		CRDs:                     crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStopTimeout:  time.Minute,
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	if o.EtcdQuota > 0 {
		env.ControlPlane.Etcd = &envtest.Etcd{}
		env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(o.EtcdQuota, 10))
	}
	var wrapper string
	if len(o.APIServerArgs) > 0 || len(o.APIServerEnv) > 0 {
		env.ControlPlane.APIServer = &envtest.APIServer{}
		for k, v := range o.APIServerArgs {
			env.ControlPlane.APIServer.Configure().Set(k, v)
		}
		if len(o.APIServerEnv) > 0 {
			// envtest starts the binary with this process's environment and has no setting for
			// another: a script sets it and execs the apiserver (same PID, same command line after).
			if wrapper, err = os.MkdirTemp("", "k8stest-apiserver-"); err != nil {
				return nil, err
			}
			var quoted []string
			for _, kv := range o.APIServerEnv {
				quoted = append(quoted, strconv.Quote(kv))
			}
			script := fmt.Sprintf("#!/bin/sh\nexec env %s %s \"$@\"\n", strings.Join(quoted, " "),
				strconv.Quote(filepath.Join(dir, "kube-apiserver")))
			path := filepath.Join(wrapper, "kube-apiserver")
			if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
				return nil, err
			}
			env.ControlPlane.APIServer.Path = path
		}
	}
	cfg, err := env.Start()
	if err != nil {
		if wrapper != "" {
			_ = os.RemoveAll(wrapper)
		}
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	return &Environment{Config: cfg, env: env, wrapper: wrapper}, nil
}

// WriteKubeconfig writes a kubeconfig of a cluster-admin user to path, for
// code under test that takes a kubeconfig file.
func (e *Environment) WriteKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "keb-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding kubeconfig user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering kubeconfig: %w", err)
	}
	return os.WriteFile(path, kc, 0o600)
}

// Stop stops the apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	for _, p := range e.restarted {
		_ = p.Signal(syscall.SIGTERM)
		for deadline := time.Now().Add(time.Minute); procguard.Running(p.Pid) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if e.wrapper != "" {
		defer os.RemoveAll(e.wrapper)
	}
	return e.env.Stop()
}

// Main starts one apiserver for a test package, runs its tests, stops it and
// exits. The environment is in *env while the tests run.
func Main(m *testing.M, env **Environment) { os.Exit(Run(m, env, nil)) }

// Run is Main without os.Exit; inner runs the tests (nil means m.Run), so a
// package can combine it with pgtest.Run:
//
//	func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }
func Run(m *testing.M, env **Environment, inner func(*testing.M) int) int {
	// controller-runtime and client-go log through logrus: errors show,
	// chatter does not.
	ctrllog.SetLogger(logging.Logr(logrus.StandardLogger()))
	// The apiservers, etcds and whatever else the tests start die with the
	// test binary, even when `go test -timeout` or a SIGKILL ends it.
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "k8stest:", err)
		return 1
	}
	e, err := Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8stest: the tests need a kube-apiserver and never skip:", err)
		return 1
	}
	*env = e
	if inner == nil {
		inner = func(m *testing.M) int { return m.Run() }
	}
	code := inner(m)
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "k8stest: stopping:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// StopAPIServer stops the kube-apiserver (etcd keeps running) and returns a
// function that starts it again with the same arguments, certificates and
// port, so that clients' kubeconfigs stay valid. It is for fault tests: the
// restarted apiserver is stopped by Stop like the first one.
func (e *Environment) StopAPIServer() (restart func() error, err error) {
	port := e.env.ControlPlane.APIServer.SecureServing.ListenAddr.Port
	pid, args, err := findAPIServer(port)
	if err != nil {
		return nil, err
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil, err
	}
	if err := proc.Signal(syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver %d: %w", pid, err)
	}
	// A graceful stop waits for clients' watches, which keb holds open: it
	// took the full minute before the SIGKILL. A few seconds are grace
	// enough; after that the stop is a crash, also an outage keb must ride.
	deadline := time.Now().Add(5 * time.Second)
	for procguard.Running(pid) {
		if time.Now().After(deadline) {
			_ = proc.Signal(syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return func() error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("restarting kube-apiserver: %w", err)
		}
		go func() { _ = cmd.Wait() }()
		e.restarted = append(e.restarted, cmd.Process)
		return nil
	}, nil
}

// FreezeAPIServer stops the kube-apiserver with SIGSTOP, as a hung control
// plane looks to its clients: connections open, nothing answered. thaw
// resumes it (SIGCONT); call it before Stop.
func (e *Environment) FreezeAPIServer() (thaw func() error, err error) {
	port := e.env.ControlPlane.APIServer.SecureServing.ListenAddr.Port
	pid, _, err := findAPIServer(port)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("freezing kube-apiserver %d: %w", pid, err)
	}
	return func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("thawing kube-apiserver %d: %w", pid, err)
		}
		return nil
	}, nil
}

// APIServerPID is the kube-apiserver's process ID, for measuring what it costs (its CPU time in /proc).
func (e *Environment) APIServerPID() (int, error) {
	pid, _, err := findAPIServer(e.env.ControlPlane.APIServer.SecureServing.ListenAddr.Port)
	return pid, err
}

// EtcdURL is the client URL of the apiserver's etcd (plain HTTP on loopback), for a bulk loader writing
// objects as the apiserver stores them.
func (e *Environment) EtcdURL() string { return e.env.ControlPlane.Etcd.URL.String() }

// findAPIServer finds the kube-apiserver serving on port among our
// processes and returns its PID and command line.
func findAPIServer(port string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == "kube-apiserver" && slices.Contains(args, "--secure-port="+port) {
			return pid, args, nil
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver serving on port %s", port)
}

// InstallCRDs installs keb's CRDs into a running apiserver (one started
// without them).
func (e *Environment) InstallCRDs() error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("installing keb's CRDs: %w", err)
	}
	return nil
}
