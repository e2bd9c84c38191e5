// Command keb-image builds keb's container image without a Docker engine or a
// base image from a registry: one layer with the static keb binary, a passwd
// entry for the non-root user 65532 and an empty /tmp, written as an OCI image
// layout (for registries: `crane push`, `skopeo copy oci:...`) and as a tarball
// that `docker load` / `podman load` accept. `make image` runs it; the
// Dockerfile describes the same image for those who build with Docker.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// nonRoot is the user keb runs as (distroless's "nonroot"); the Helm chart's
// securityContext uses the same ID.
const nonRoot = 65532

func main() {
	binary := flag.String("binary", "bin/keb", "the static keb binary (CGO_ENABLED=0)")
	out := flag.String("layout", "bin/image/oci", "directory of the OCI image layout to write")
	tarPath := flag.String("tarball", "bin/image/keb.tar", "docker-loadable tarball to write")
	ref := flag.String("tag", "keb:dev", "image reference recorded in the tarball")
	flag.Parse()
	if err := build(*binary, *out, *tarPath, *ref); err != nil {
		fmt.Fprintln(os.Stderr, "keb-image:", err)
		os.Exit(1)
	}
}

func build(binary, out, tarPath, ref string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("reading the keb binary: %w", err)
	}
	layerTar, err := rootfs(bin)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("building the layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goarch()
	cfg.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cfg.Config.Entrypoint = []string{"/usr/local/bin/keb"}
	cfg.Config.Cmd = []string{"serve"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cfg.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	cfg.Created = v1.Time{Time: time.Unix(0, 0)} // reproducible: same binary, same digest
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("setting the image config: %w", err)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout: %w", err)
	}
	if err := p.AppendImage(img); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return fmt.Errorf("writing the tarball: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("built %s (%s): OCI layout %s, tarball %s\n", ref, digest, out, tarPath)
	return nil
}

// rootfs is the image's only layer.
func rootfs(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"tmp/", 0o1777}, {"usr/", 0o755}, {"usr/local/", 0o755}, {"usr/local/bin/", 0o755}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)},
		{"etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot)},
		{"usr/local/bin/keb", 0o755, bin},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the layer: %w", err)
	}
	return buf.Bytes(), nil
}
