package lvm

import (
	"bufio"
	"os"
	"strings"
)

// HasDeviceMapper reports whether the kernel offers device-mapper (its misc device is
// registered), i.e. whether logical volumes can be activated. Without it the agent runs lvm
// in metadata-only mode and reads volumes through their physical volumes.
func HasDeviceMapper() bool {
	f, err := os.Open("/proc/misc")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[1] == "device-mapper" {
			return true
		}
	}
	return false
}
