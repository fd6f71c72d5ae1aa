// Package kubebuild is the contract between the launcher, which builds the Kubernetes binaries
// of kaas's local clusters in the background on a first `make up`, and kaas, which lets
// clusters wait for that build instead of refusing them: one JSON status file, written by the
// launcher (replaced atomically) and read by kaas (PLINTH_KAAS_VAGRANT_KUBE_BUILD_STATUS).
package kubebuild

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Kwok is the binary that runs every machine's simulated Node, whatever its version.
const Kwok = "kwok"

// ControlPlane names the control-plane binaries of a Kubernetes version in the binary
// directory (what `make tools-k8s` builds for each offered version).
func ControlPlane(version string) []string {
	return []string{"kube-apiserver-" + version, "kube-controller-manager-" + version}
}

// Missing lists, in order, the names that are not executable files in dir.
func Missing(dir string, names ...string) []string {
	var missing []string
	for _, n := range names {
		if !Executable(filepath.Join(dir, n)) {
			missing = append(missing, n)
		}
	}
	return missing
}

// Executable reports whether path is a regular file with an execute bit.
func Executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// The states of Status.State.
const (
	Building = "building"
	Failed   = "failed"
	Done     = "done"
)

// Status is the status file. No file: nothing is being built.
type Status struct {
	// State is Building, Failed or Done.
	State string `json:"state"`
	// Versions are the Kubernetes versions the build brings; none: every version.
	Versions []string  `json:"versions"`
	Started  time.Time `json:"started"`
	// EstimateSeconds is how long the whole build is expected to take.
	EstimateSeconds int `json:"estimate_seconds"`
	// Log is the build's output file.
	Log string `json:"log"`
	// PID leads the build's process group; a reader treats Building with a dead PID as Failed.
	PID int `json:"pid"`
	// Error is one line: why the build failed.
	Error string `json:"error,omitempty"`
}

// maxFile bounds what Read accepts: the launcher writes a few hundred bytes.
const maxFile = 64 << 10

// Read reads the status file at path; an error wrapping os.ErrNotExist when there is none.
func Read(path string) (Status, error) {
	var st Status
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if len(data) > maxFile {
		return st, fmt.Errorf("%s: %d bytes, not a build status", path, len(data))
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
