package kubelocal

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// makeVolumeGroup makes Options.VolumeGroup on a loop device over a sparse file in Dir, for
// the node's lvmd (deploy/k8s/overlays/local names it). Down removes it, its logical volumes
// and the loop device.
func makeVolumeGroup(l layout, st *state) error {
	if exec.Command("vgs", l.VolumeGroup).Run() == nil {
		return fmt.Errorf("kubelocal: volume group %s already exists on this machine", l.VolumeGroup)
	}
	file := l.path("lvm", l.VolumeGroup+".img")
	if err := os.MkdirAll(l.path("lvm"), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("kubelocal: %w", err)
	}
	err = f.Truncate(l.VolumeGroupSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("kubelocal: %s: %w", file, err)
	}
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubelocal: losetup %s: %v: %s", file, err, out)
	}
	st.LoopDevice = strings.TrimSpace(string(out))
	st.VolumeGroup = l.VolumeGroup
	if err := st.save(l.Dir); err != nil {
		return err
	}
	if out, err := exec.Command("vgcreate", "-y", l.VolumeGroup, st.LoopDevice).CombinedOutput(); err != nil {
		return fmt.Errorf("kubelocal: vgcreate %s %s: %v: %s", l.VolumeGroup, st.LoopDevice, err, out)
	}
	return nil
}

// removeVolumeGroup removes the volume group (with every logical volume left in it), its
// physical volume's label and the loop device.
func removeVolumeGroup(st *state) []error {
	var errs []error
	if st.VolumeGroup != "" && exec.Command("vgs", st.VolumeGroup).Run() == nil {
		if out, err := exec.Command("vgremove", "-f", "-y", st.VolumeGroup).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("vgremove %s: %v: %s", st.VolumeGroup, err, out))
		}
	}
	if st.LoopDevice != "" {
		if exec.Command("pvs", st.LoopDevice).Run() == nil {
			_ = exec.Command("pvremove", "-y", st.LoopDevice).Run()
		}
		if out, err := exec.Command("losetup", "-d", st.LoopDevice).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such device") {
			errs = append(errs, fmt.Errorf("losetup -d %s: %v: %s", st.LoopDevice, err, out))
		}
	}
	return errs
}
