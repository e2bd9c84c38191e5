package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds keb statically, builds the image from it, reads the
// image back from the OCI layout and the tarball, and runs the binary taken
// out of the image's layer: what a container runtime would start.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "keb")
	gobuild := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=image-test", "-o", bin, "../keb")
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
	// A static binary runs with nothing from the host's libraries.
	ver, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(ver), "image-test") {
		t.Fatalf("keb version from the image: %v: %s", err, ver)
	}
}
