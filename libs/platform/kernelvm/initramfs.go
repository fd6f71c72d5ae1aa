package kernelvm

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The two stages of the guest's boot, see each file's header.
var (
	//go:embed guest/init
	stage1Script []byte
	//go:embed guest/stage2
	stage2Script []byte
)

// initramfsModules are what stage 1 loads to reach the host's files; modprobe adds their
// dependencies.
func initramfsModules() []string { return []string{"virtio_pci", "9pnet_virtio", "9p", "overlay"} }

// writeBaseInitramfs writes the cached part of the guest's initramfs to path: a static
// busybox, /dev/console, and the modules stage 1 loads with the list of their load order.
// The stage scripts are appended at each run (writeInitramfs), so a change to them needs no
// new cache.
func writeBaseInitramfs(ctx context.Context, path string, progs map[string]string, tree, release string) error {
	busybox, err := staticBusybox(progs["busybox"])
	if err != nil {
		return err
	}
	mods, err := moduleOrder(ctx, progs["modprobe"], tree, release)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := newCPIO(f)
	for _, d := range []string{"bin", "dev", "modules"} {
		w.dir(d, 0o755)
	}
	w.charDev("dev/console", 0o600, 5, 1) // the kernel opens it for init's output before any mount
	w.file("bin/busybox", 0o755, busybox)
	var order []string
	for _, m := range mods {
		data, err := os.ReadFile(m)
		if err != nil {
			_ = f.Close()
			return err
		}
		w.file("modules/"+filepath.Base(m), 0o644, data)
		order = append(order, filepath.Base(m))
	}
	w.file("modules/order", 0o644, []byte(strings.Join(order, "\n")+"\n"))
	if err := w.close(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// writeInitramfs writes the initramfs of one run to path: the cached base followed by a
// second archive with the stage scripts (the kernel unpacks concatenated archives in turn).
func writeInitramfs(path, base string) error {
	baseData, err := os.ReadFile(base)
	if err != nil {
		return err
	}
	var scripts bytes.Buffer
	w := newCPIO(&scripts)
	w.file("init", 0o755, stage1Script)
	w.file("stage2", 0o755, stage2Script)
	if err := w.close(); err != nil {
		return err
	}
	return os.WriteFile(path, append(baseData, scripts.Bytes()...), 0o644)
}

// moduleOrder lists the module files stage 1 loads, dependencies first, each once.
func moduleOrder(ctx context.Context, modprobe, tree, release string) ([]string, error) {
	args := append([]string{"-d", tree, "-S", release, "-a", "--show-depends"}, initramfsModules()...)
	out, err := runIn(ctx, "", modprobe, args...)
	if err != nil {
		return nil, fmt.Errorf("kernelvm: the initramfs's modules: %w", err)
	}
	return parseShowDepends(out)
}

// parseShowDepends reads modprobe --show-depends: "insmod /path/x.ko [params]" lines in load
// order (repeated for shared dependencies), "builtin x" for what the kernel has built in.
func parseShowDepends(out []byte) ([]string, error) {
	var mods []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0 || fields[0] == "builtin":
		case fields[0] == "insmod" && len(fields) == 2:
			if !slices.Contains(mods, fields[1]) {
				mods = append(mods, fields[1])
			}
		default:
			return nil, fmt.Errorf("kernelvm: unexpected modprobe --show-depends line %q", sc.Text())
		}
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("kernelvm: modprobe --show-depends %s listed no module", strings.Join(initramfsModules(), " "))
	}
	return mods, nil
}

// staticBusybox reads the busybox at path, which must be statically linked: the initramfs
// has no C library.
func staticBusybox(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("kernelvm: %s is not an ELF program: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%w: %s is dynamically linked: apt-get install busybox-static", ErrUnavailable, path)
		}
	}
	return data, nil
}
