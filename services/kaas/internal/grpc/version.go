package grpc

import (
	"runtime"
	"runtime/debug"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
)

// versionInformation is the binary's build information, as Go recorded it: the main
// module's version (from the VCS tag or a pseudo-version), the commit, whether the tree was
// modified, the commit time, the Go version, compiler and platform.
func versionInformation() *kaaspb.GetVersionReply_VersionInformation {
	vi := &kaaspb.GetVersionReply_VersionInformation{
		GitVersion: "unknown", GitCommit: "unknown", GitTreeState: "unknown", BuildDate: "unknown",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return vi
	}
	if v := info.Main.Version; v != "" {
		vi.GitVersion = v
	}
	vi.GoVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			vi.GitCommit = s.Value
		case "vcs.time":
			vi.BuildDate = s.Value
		case "vcs.modified":
			vi.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		case "-compiler":
			vi.Compiler = s.Value
		}
	}
	return vi
}
