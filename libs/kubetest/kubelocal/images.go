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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// busyboxPath is Debian's static busybox (package busybox-static): the one program of the
// stand-in images, since no registry that serves registry.k8s.io/pause or busybox is
// reachable here. They carry the label org.plinth.stand-in=true.
const busyboxPath = "/bin/busybox"

// standIn is an image made here: from this machine's busybox, or around static programs
// built by `make tools-k8s` (and `make tools-s3`).
type standIn struct {
	name       string
	layer      func() ([]byte, error)
	entrypoint []string
	cmd        []string
	user       string
}

func standIns(l layout) []standIn {
	busybox := sync.OnceValues(busyboxLayer) // one layer, both images
	out := []standIn{
		// The sandbox ("pause") container only holds the pod's namespaces.
		{name: PauseImage, layer: busybox, entrypoint: []string{"/bin/sleep", "2147483647"}},
		{name: BusyboxImage, layer: busybox, cmd: []string{"sh"}},
	}
	if l.CertManager {
		for _, p := range []struct{ image, path string }{
			{CertManagerImage, l.certManagerBinary()},
			{CAInjectorImage, l.caInjectorBinary()},
		} {
			out = append(out, standIn{
				name:       p.image,
				layer:      func() ([]byte, error) { return programLayer(baseFiles(), p.path) },
				entrypoint: []string{"/usr/local/bin/" + filepath.Base(p.path)},
				user:       "65532:65532",
			})
		}
	}
	if l.Storage {
		out = append(out, programStandIn(LocalPathImage, l.localPathBinary()))
	}
	for _, image := range slices.Sorted(maps.Keys(l.Programs)) {
		out = append(out, programStandIn(image, l.Programs[image]...))
	}
	return out
}

// programStandIn is an image holding static programs (each at /usr/local/bin/<base name>, or
// where ProgramPath puts it) beside busybox's /bin (a shell and cp for an init container that
// copies the programs into a volume), the first program its entrypoint. It names no user: the
// pod's securityContext decides.
func programStandIn(image string, programs ...string) standIn {
	return standIn{
		name: image,
		layer: func() ([]byte, error) {
			files, err := busyboxFiles()
			if err != nil {
				return nil, err
			}
			return programLayer(files, programs...)
		},
		entrypoint: []string{"/" + inImage(programs[0])},
	}
}

// ProgramPath names a program for Options.Programs or ImportProgram that goes to an exact
// path of the image instead of /usr/local/bin: upstream images whose manifests run it there
// (CloudNativePG's operator runs /manager, and copies it into every PostgreSQL pod from there).
func ProgramPath(host, inImage string) string { return host + ":" + inImage }

// hostPath and inImage split a program of Options.Programs: the file on this machine, and its
// path in the image (no leading slash).
func hostPath(program string) string {
	if host, _, ok := strings.Cut(program, ":/"); ok {
		return host
	}
	return program
}

func inImage(program string) string {
	if _, in, ok := strings.Cut(program, ":/"); ok {
		return in
	}
	return "usr/local/bin/" + filepath.Base(program)
}

// importImages writes the stand-ins as `docker save` archives and imports them, and every
// archive of Options.Images, into the cluster's containerd.
func importImages(ctx context.Context, l layout) error {
	for _, s := range standIns(l) {
		if err := importStandIn(ctx, l, s); err != nil {
			return err
		}
	}
	for _, a := range l.Images {
		if err := ctr(ctx, l, "images", "import", a); err != nil {
			return fmt.Errorf("kubelocal: import %s: %w", a, err)
		}
	}
	return nil
}

// importStandIn writes s as a `docker save` archive under the cluster's images directory and
// imports it into the cluster's containerd.
func importStandIn(ctx context.Context, l layout, s standIn) error {
	if err := os.MkdirAll(l.path("images"), 0o700); err != nil {
		return err
	}
	layer, err := s.layer()
	if err != nil {
		return err
	}
	archive, err := dockerArchive(s, layer)
	if err != nil {
		return err
	}
	path := l.path("images", strings.NewReplacer("/", "_", ":", "_").Replace(s.name)+".tar")
	if err := os.WriteFile(path, archive, 0o600); err != nil {
		return err
	}
	if err := ctr(ctx, l, "images", "import", path); err != nil {
		return fmt.Errorf("kubelocal: import %s: %w", s.name, err)
	}
	return nil
}

// ImportProgram imports an image named image holding static programs (as Options.Programs,
// the first its entrypoint) into the running cluster's containerd, for a pod that runs an
// upstream program built here (e2e runs TopoLVM's node plugin so, make kube-demo
// CloudNativePG's operator).
func (c *Cluster) ImportProgram(ctx context.Context, image string, programs ...string) error {
	_, l, err := loadCluster(c.Dir, nil)
	if err != nil {
		return err
	}
	return importStandIn(ctx, l, programStandIn(image, programs...))
}

// file is one entry of a layer.
type file struct {
	name string // relative, no leading slash; directories end in /
	mode int64
	data []byte
	link string // a symbolic link to this
}

// tarLayer writes files as an image layer (every time the epoch, so a layer is reproducible).
func tarLayer(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: time.Unix(0, 0)}
		switch {
		case strings.HasSuffix(f.name, "/"):
			h.Typeflag = tar.TypeDir
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// baseFiles are what every stand-in has besides its programs: /etc/passwd with root, nobody
// and nonroot (65532, as distroless images), and /tmp.
func baseFiles() []file {
	passwd := "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/bin/false\n"
	return []file{{name: "etc/", mode: 0o755}, {name: "tmp/", mode: 0o1777},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)}}
}

// busyboxLayer is a layer with busybox at /bin/busybox and a link for each of its applets.
func busyboxLayer() ([]byte, error) {
	files, err := busyboxFiles()
	if err != nil {
		return nil, err
	}
	return tarLayer(files)
}

// busyboxFiles are the base files, busybox at /bin/busybox and a link for each of its applets.
func busyboxFiles() ([]file, error) {
	bin, err := staticBinary(busyboxPath, "install Debian's busybox-static")
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("kubelocal: busybox --list: %w", err)
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)
	files := append(baseFiles(), file{name: "bin/", mode: 0o755}, file{name: "bin/busybox", mode: 0o755, data: bin})
	for _, a := range applets {
		if a != "busybox" && !strings.Contains(a, "/") {
			files = append(files, file{name: "bin/" + a, mode: 0o777, link: "busybox"})
		}
	}
	return files, nil
}

// programLayer is a layer of base and static programs, each at its inImage path.
func programLayer(base []file, programs ...string) ([]byte, error) {
	files := append(base, file{name: "usr/", mode: 0o755}, file{name: "usr/local/", mode: 0o755}, file{name: "usr/local/bin/", mode: 0o755})
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[f.name] = true
	}
	for _, p := range programs {
		bin, err := staticBinary(hostPath(p), "build it statically (CGO_ENABLED=0)")
		if err != nil {
			return nil, err
		}
		name := inImage(p)
		for i := range len(name) {
			if d := name[:i+1]; name[i] == '/' && !dirs[d] {
				dirs[d] = true
				files = append(files, file{name: d, mode: 0o755})
			}
		}
		files = append(files, file{name: name, mode: 0o755, data: bin})
	}
	return tarLayer(files)
}

// staticBinary reads path, which must be a static executable: it runs in an empty image.
func staticBinary(path, hint string) ([]byte, error) {
	if err := static(path); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, hint)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	return data, nil
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
			return fmt.Errorf("kubelocal: %s is dynamically linked", path)
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
			"User":       s.user,
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Labels":     map[string]string{"org.plinth.stand-in": "true"},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]string{{"created_by": "kubelocal: a local stand-in"}},
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
