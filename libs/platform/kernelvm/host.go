package kernelvm

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"time"
)

// HostHasDeviceMapper reports whether this kernel's device-mapper driver answers: the
// kernel lists it in /proc/misc (loaded), or `dmsetup version` reaches it (which loads the
// module on a kernel that has it). A container without /dev/mapper/control answers false.
func HostHasDeviceMapper() bool {
	if misc, err := os.ReadFile("/proc/misc"); err == nil && bytes.Contains(misc, []byte(" device-mapper\n")) {
		if _, err := os.Stat("/dev/mapper/control"); err == nil {
			return true
		}
	}
	dmsetup, err := (program{"dmsetup", "dmsetup"}).look()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, dmsetup, "version").Run() == nil
}

// InGuest reports whether this process runs in a kernelvm guest: the guest sets GuestEnv=1
// for the command it runs, and its children inherit it.
func InGuest() bool { return os.Getenv(GuestEnv) == "1" }
