package cephlocal

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// DashboardModuleDir is where Debian's ceph-mgr-dashboard installs the mgr module.
const DashboardModuleDir = "/usr/share/ceph/mgr/dashboard"

// Command is one program a cluster runs and the Debian package that installs it.
type Command struct {
	// Name is the program ("ceph-mon") or, for the dashboard module, its directory.
	Name string
	// Package is the Debian package that brings it.
	Package string
}

// Commands lists what Start needs with these options: the daemons and the client tools
// (ceph, ceph-authtool, monmaptool, rados), plus radosgw and radosgw-admin with RGW and the
// dashboard module with Dashboard.
func Commands(o Options) []Command {
	cmds := []Command{
		{"ceph-mon", "ceph-mon"}, {"ceph-mgr", "ceph-mgr"}, {"ceph-osd", "ceph-osd"},
		{"ceph", "ceph-common"}, {"ceph-authtool", "ceph-common"}, {"monmaptool", "ceph-common"},
		{"rados", "ceph-common"},
	}
	if o.RGW {
		cmds = append(cmds, Command{"radosgw", "radosgw"}, Command{"radosgw-admin", "ceph-common"})
	}
	if o.Dashboard {
		cmds = append(cmds, Command{DashboardModuleDir, "ceph-mgr-dashboard"})
	}
	return cmds
}

// LookBinaries reports, in one error that says what to install, every command of Commands(o)
// that is missing.
func LookBinaries(o Options) error {
	var missing, pkgs []string
	for _, c := range Commands(o) {
		var err error
		if strings.HasPrefix(c.Name, "/") {
			_, err = os.Stat(c.Name)
		} else {
			_, err = exec.LookPath(c.Name)
		}
		if err != nil {
			missing = append(missing, c.Name)
			if !slices.Contains(pkgs, c.Package) {
				pkgs = append(pkgs, c.Package)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cephlocal: %s not found: apt-get install %s", strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return nil
}
