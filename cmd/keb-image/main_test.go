package main

import (
	"archive/tar"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds keb statically, builds the image from it, reads the
// image back from the OCI layout and the tarball, checks that the binary in
// the image's layer needs no library of the host, and runs it: what a
// container runtime would start.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "keb")
	// The build configuration of this test binary (make test: CGO_ENABLED=0
	// and -trimpath for everything, as the release build), so that keb's
	// packages come from the build cache and only the link runs here; a
	// separate configuration compiled all of keb's dependencies again, the
	// longest part of `make test`. CGO_ENABLED=0 whatever the test ran with:
	// the image holds no C library.
	args := []string{"build", "-ldflags", "-s -w -X main.version=image-test", "-o", bin}
	if builtWith("-trimpath") == "true" {
		args = append(args, "-trimpath")
	}
	gobuild := exec.Command("go", append(args, "../keb")...)
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("building keb: %v\n%s", err, out)
	}
	out, tarPath := filepath.Join(dir, "oci"), filepath.Join(dir, "keb.tar")
	if err := build(bin, out, tarPath, "keb:test"); err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index: %v, %v", m, err)
	}
	img, err := p.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/keb" ||
		strings.Join(cfg.Config.Cmd, " ") != "serve" || cfg.OS != "linux" {
		t.Fatalf("image config: %+v", cfg.Config)
	}
	if _, err := tarball.ImageFromPath(tarPath, nil); err != nil {
		t.Fatalf("the tarball is not a loadable image: %v", err)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	extracted := filepath.Join(dir, "from-image")
	found := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found[h.Name] = true
		if h.Name == "usr/local/bin/keb" {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	for _, want := range []string{"usr/local/bin/keb", "etc/passwd", "tmp/"} {
		if !found[want] {
			t.Errorf("the layer lacks %s", want)
		}
	}
	// A static binary runs with nothing from the host's libraries: no
	// dynamic loader, no shared library.
	exe, err := elf.Open(extracted)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	for _, p := range exe.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary in the image is dynamically linked (program header %s)", p.Type)
		}
	}
	if libs, err := exe.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary in the image needs libraries %v (%v)", libs, err)
	}
	ver, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(ver), "image-test") {
		t.Fatalf("keb version from the image: %v: %s", err, ver)
	}
}

// builtWith is a build setting of this test binary ("" when not recorded).
func builtWith(key string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == key {
				return s.Value
			}
		}
	}
	return ""
}
