package kubelocal

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

// busyboxPath is Debian's static busybox (package busybox-static): the one program of the
// stand-in images, since no registry that serves registry.k8s.io/pause or busybox is
// reachable here. They carry the label org.plinth.stand-in=true.
const busyboxPath = "/bin/busybox"

// standIn is an image made from this machine's busybox.
type standIn struct {
	name       string
	entrypoint []string
	cmd        []string
}

func standIns() []standIn {
	return []standIn{
		// The sandbox ("pause") container only holds the pod's namespaces.
		{name: PauseImage, entrypoint: []string{"/bin/sleep", "2147483647"}},
		{name: BusyboxImage, cmd: []string{"sh"}},
	}
}

// importImages writes the stand-ins as `docker save` archives and imports them, and every
// archive of Options.Images, into the cluster's containerd.
func importImages(ctx context.Context, l layout) error {
	layer, err := busyboxLayer()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.path("images"), 0o700); err != nil {
		return err
	}
	archives := []string{}
	for _, s := range standIns() {
		archive, err := dockerArchive(s, layer)
		if err != nil {
			return err
		}
		path := l.path("images", strings.NewReplacer("/", "_", ":", "_").Replace(s.name)+".tar")
		if err := os.WriteFile(path, archive, 0o600); err != nil {
			return err
		}
		archives = append(archives, path)
	}
	for _, a := range append(archives, l.Images...) {
		if err := ctr(ctx, l, "images", "import", a); err != nil {
			return fmt.Errorf("kubelocal: import %s: %w", a, err)
		}
	}
	return nil
}

// busyboxLayer is a layer with busybox at /bin/busybox, a link for each of its applets, and
// /tmp.
func busyboxLayer() ([]byte, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w (install Debian's busybox-static)", err)
	}
	if err := static(busyboxPath); err != nil {
		return nil, err
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("kubelocal: busybox --list: %w", err)
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"etc/", 0o755}, {"tmp/", 0o1777}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644, Size: int64(len(passwd)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(passwd); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// static fails unless path is an ELF without an interpreter: it must run in an empty image.
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("kubelocal: %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("kubelocal: %s is dynamically linked: install Debian's busybox-static", path)
		}
	}
	return nil
}

// dockerArchive is the image as `docker save` writes it, which `ctr images import` reads.
func dockerArchive(s standIn, layer []byte) ([]byte, error) {
	sum := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config": map[string]any{
			"Entrypoint": s.entrypoint,
			"Cmd":        s.cmd,
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Labels":     map[string]string{"org.plinth.stand-in": "true"},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]string{{"created_by": "kubelocal: Debian's busybox-static (a stand-in)"}},
	})
	if err != nil {
		return nil, err
	}
	csum := sha256.Sum256(config)
	configName := hex.EncodeToString(csum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config": configName, "RepoTags": []string{s.name}, "Layers": []string{"layer.tar"},
	}})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {"layer.tar", layer}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
