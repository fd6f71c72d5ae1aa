package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/loopvg"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// DevConfigName is the lvmd.yaml dev-vg writes into its directory.
const DevConfigName = "lvmd.yaml"

// devVG makes a loop-backed volume group for development (what `make up` runs as root when
// no volume group is configured) and writes an lvmd.yaml for it; -remove deletes both. The
// VG survives restarts of the agent and of `make up`: only -remove deletes it.
func devVG(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("lvmd-agent dev-vg", flag.ContinueOnError)
	dir := fs.String("dir", ".plinth/lvm", "directory for the backing file and lvmd.yaml")
	vg := fs.String("vg", "plinth", "volume group name")
	class := fs.String("device-class", "dev", "device class name in lvmd.yaml")
	size := fs.String("size", "32G", "backing file size (sparse; only written bytes use disk), e.g. 32G or 512M")
	remove := fs.Bool("remove", false, "remove the volume group, its loop device and files instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	bytes, err := config.ParseSize(*size)
	if err != nil {
		return fmt.Errorf("-size: %w", err)
	}
	o := loopvg.Options{File: filepath.Join(abs, "pv0.img"), VG: *vg, Size: bytes, MetadataOnly: !lvm.HasDeviceMapper()}
	if *remove {
		if err := loopvg.Remove(ctx, o); err != nil {
			return err
		}
		_ = os.Remove(filepath.Join(abs, DevConfigName))
		fmt.Fprintf(out, "removed volume group %s and %s\n", *vg, o.File)
		return nil
	}
	if err := deviceclass.QualifiedName(*class + "-thin"); err != nil { // the thin class's name too
		return fmt.Errorf("-device-class: %w", err)
	}
	dev, err := loopvg.Ensure(ctx, o)
	if err != nil {
		return err
	}
	yaml := fmt.Sprintf("# Written by `lvmd-agent dev-vg`: a loop-backed volume group on %s (%s).\n"+
		"device-classes:\n  - name: %s\n    volume-group: %s\n    default: true\n    spare-gb: 1\n", o.File, dev, *class, *vg)
	_, noThinCheck := exec.LookPath("thin_check")
	switch {
	case o.MetadataOnly: // no device-mapper: no thin pool
	case noThinCheck != nil:
		fmt.Fprintln(out, "no thin class: lvm activates thin pools only with thin_check (apt-get install thin-provisioning-tools)")
	default:
		// A thin class beside, on a pool of a quarter of the group.
		if err := ensurePool(ctx, *vg, devPool, uint64(bytes)/4); err != nil {
			return err
		}
		yaml += fmt.Sprintf("  - name: %s-thin\n    volume-group: %s\n    spare-gb: 0\n    type: thin\n"+
			"    thin-pool:\n      name: %s\n      overprovision-ratio: 4\n", *class, *vg, devPool)
	}
	cfg := filepath.Join(abs, DevConfigName)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "volume group %s on %s (%s); device classes in %s\n", *vg, dev, o.File, cfg)
	return nil
}

// devPool is the thin pool dev-vg makes where device-mapper is.
const devPool = "thinpool"

// ensurePool makes the thin pool unless the group has it.
func ensurePool(ctx context.Context, vg, name string, size uint64) error {
	r := lvm.New(lvm.Options{Env: os.Environ()})
	lvs, err := r.LVs(ctx, vg)
	if err != nil {
		return err
	}
	for _, lv := range lvs {
		if lv.Name == name {
			return nil
		}
	}
	// Whole extents: lvm's default extent is 4 MiB.
	return r.CreateThinPool(ctx, vg, name, size/(4<<20)*(4<<20))
}
