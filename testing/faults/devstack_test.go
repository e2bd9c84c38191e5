package faults

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// TestKebDevChildrenDieWithIt kills `keb dev` with SIGKILL, which gives it no
// chance to stop anything: its PostgreSQL, etcd, kube-apiserver and stand-ins
// (keb sim) must go with it, and a new `keb dev` in the same directory starts
// cleanly.
func TestKebDevChildrenDieWithIt(t *testing.T) {
	t.Parallel() // as newStack's
	dir := filepath.Join(t.TempDir(), ".keb")
	bin, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, int) {
		port := freePort(t)
		cmd := exec.Command(kebBin, "dev", "--dir", dir, "--port", strconv.Itoa(port), "--k8s-bin-dir", bin)
		cmd.Env = append(os.Environ(), "APP_LOG_FORMAT=json")
		lf, err := os.Create(filepath.Join(t.TempDir(), "keb-dev.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = lf, lf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Minute, "keb dev ready", func() bool {
			res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
		return cmd, port
	}
	dev, _ := start()
	children := servicesUnder(dir)
	if len(children) != 4 {
		t.Fatalf("keb dev runs %v, want PostgreSQL, etcd, kube-apiserver and keb sim", children)
	}
	if err := dev.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = dev.Wait()
	waitFor(t, time.Minute, "keb dev's PostgreSQL, etcd, kube-apiserver and keb sim gone", func() bool { return noneAlive(children) })

	again, _ := start()
	second := servicesUnder(dir)
	_ = again.Process.Signal(syscall.SIGTERM)
	_ = again.Wait()
	waitFor(t, time.Minute, "the second keb dev's services gone", func() bool { return noneAlive(second) })
}

// noneAlive reports whether every one of ps ("name (pid)") is gone.
func noneAlive(ps []string) bool {
	for _, p := range ps {
		name, pid, _ := strings.Cut(strings.TrimSuffix(p, ")"), " (")
		raw, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err == nil && len(raw) > 0 && filepath.Base(strings.Split(string(raw), "\x00")[0]) == name {
			return false
		}
	}
	return true
}

// servicesUnder lists the PostgreSQL and etcd processes whose command line
// names dir (their data directories), the kube-apiservers using that etcd
// and the keb sim whose directory is in dir.
func servicesUnder(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	type process struct{ pid, name, cmdline string }
	var all []process
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		all = append(all, process{e.Name(), filepath.Base(args[0]), strings.Join(args, " ")})
	}
	var out []string
	var etcdURLs []string
	for _, p := range all {
		if (p.name == "postgres" || p.name == "etcd") && strings.Contains(p.cmdline, dir) {
			out = append(out, p.name+" ("+p.pid+")")
		}
		if p.name == filepath.Base(kebBin) && strings.Contains(p.cmdline, " sim ") && strings.Contains(p.cmdline, "--dir "+filepath.Join(dir, "sim")) {
			out = append(out, p.name+" ("+p.pid+")")
		}
		if p.name == "etcd" && strings.Contains(p.cmdline, dir) {
			for _, f := range strings.Fields(p.cmdline) {
				if u, ok := strings.CutPrefix(f, "--listen-client-urls="); ok {
					etcdURLs = append(etcdURLs, u)
				}
			}
		}
	}
	for _, p := range all {
		for _, u := range etcdURLs {
			if p.name == "kube-apiserver" && strings.Contains(p.cmdline, "--etcd-servers="+u) {
				out = append(out, p.name+" ("+p.pid+")")
			}
		}
	}
	return out
}
