package launcher

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/plinth-dev/plinth/libs/platform/kubebuild"
)

// stopLeftover kills the process group of a build that a killed launcher on this home left
// running (its status still says building): two builds would write the same files. Only a
// group whose processes carry this home's marker is ours; a reused PID is left alone.
func stopLeftover(home, statusPath string) {
	st, err := kubebuild.Read(statusPath)
	if err != nil || st.State != kubebuild.Building || st.PID <= 0 {
		return
	}
	if groupCarries(st.PID, kubeBuildMarker(home)) {
		_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	}
}

// groupCarries reports whether a process of group pgid has marker in its environment.
func groupCarries(pgid int, marker string) bool {
	for _, p := range groupProcs(pgid) {
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), marker) {
			return true
		}
	}
	return false
}

// groupProcs lists the /proc directories of the live (not zombie) processes of group pgid.
func groupProcs(pgid int) []string {
	var members []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			members = append(members, p)
		}
	}
	return members
}

// otherKubeBuild finds a make already building the Kubernetes binaries in root (make
// tools-k8s, or make test, which builds them first): the launcher waits for it rather than
// write the same files beside it. 0 when there is none.
func otherKubeBuild(root string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if err != nil || filepath.Base(args[0]) != "make" || !slices.ContainsFunc(args, isKubeBuildGoal) {
			continue
		}
		if cwd, _ := os.Readlink(filepath.Join(p, "cwd")); cwd == root || slices.Contains(args, root) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			return pid
		}
	}
	return 0
}

func isKubeBuildGoal(arg string) bool {
	return arg == "tools-kaas" || arg == "tools-k8s" || arg == "test"
}
