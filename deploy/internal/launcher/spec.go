package launcher

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Spec says how the launcher runs one service binary: where it listens and what else it needs.
// The ports are the defaults from ARCHITECTURE.md; the launcher shifts them by the port offset.
type Spec struct {
	// Binary is the command name: services/<Service>/cmd/<Binary>.
	Binary string
	// Service is the directory under services/ that holds the binary.
	Service string
	// GRPCPort is the default TCP port of the gRPC server; 0 when Socket is set or the binary
	// serves no gRPC (a client-only process such as vagrant-runner).
	GRPCPort int
	// Socket, when set, is the unix socket (relative to the runtime home) the gRPC server
	// listens on instead of TCP, as its upstream peer expects.
	Socket string
	// AdminPort is the default port of the admin HTTP server (/healthz, /readyz, /metrics).
	AdminPort int
	// TLSPort, when set, is a second, mutual-TLS gRPC port (the cnpgi-plugin's operator mode).
	TLSPort int
	// NoDatabase and NoNATS leave PLINTH_DATABASE_URL and PLINTH_NATS_URL out of the binary's
	// environment: its Config has no such setting, and the binary would warn about them.
	NoDatabase, NoNATS bool
	// Settings claims the binary's own settings: prefixes (ending in "_") and whole names.
	// An inherited PLINTH_* variable whose longest claim is another binary's is left out of
	// this binary's environment (ChildEnv), so that a user's PLINTH_LVMD_CONFIG, meant for
	// lvmd-agent, does not make every other binary warn about an unknown variable.
	Settings []string
	// DependsOn lists binaries that must be ready before this one starts.
	DependsOn []string
	// Env returns extra environment for this binary, given the run's configuration (its home,
	// root and the user's own choices, which keep the launcher's out) and where every binary
	// of this run listens (keyed by binary name).
	Env func(c Config, placed map[string]Placement) map[string]string
	// Prepare, when set, runs after DependsOn are ready and before the binary starts (e.g. to
	// obtain credentials from a dependency). An error stops the launch; ErrSkip skips the
	// binary (Optional says when).
	Prepare func(ctx context.Context, c Config, placed map[string]Placement, say func(string, ...any)) error
	// Optional, when set, says when Prepare skips the binary on some machines; the Tiltfile
	// may leave such a binary out where it cannot run.
	Optional string
	// Needs, when set, lists what this binary needs on the machine under this configuration
	// (commands and the Debian packages that bring them). The launcher checks them before
	// Prepare: as root on Debian it installs what is missing, one line each; otherwise it
	// says exactly what to install (needs.go).
	Needs func(c Config) []Need
}

// Need is one thing a binary needs on the machine: a command, found on PATH (or at an
// absolute path), that a Debian package installs.
type Need struct {
	// Command is a command name ("lvm"), looked up on PATH and in /usr/sbin and /sbin, or an
	// absolute path ("/usr/bin/etcd") that must exist (an executable file, or a directory).
	Command string
	// Package is the Debian package that installs Command ("lvm2").
	Package string
	// Why says what the binary does with it, for the line the launcher prints.
	Why string
	// Without, when set, says what does not work while Command is missing: the binary still
	// runs (kaas refuses clusters with FailedPrecondition naming it). Unset, the binary cannot
	// run without it: it is skipped when the Spec is Optional, else the launch fails.
	Without string
}

// CNPGIPluginName is the plugin name the cnpgi-plugin reports in GetPluginMetadata; CloudNativePG
// finds a plugin's socket by this name inside its plugin socket directory. Declared once, by
// the plugin.
const CNPGIPluginName = cnpgiplugin.DefaultName

// Table returns the specs of every service binary the launcher knows, in start order.
// A binary found under services/ but missing here still runs, on the next free ports.
func Table() []Spec {
	return []Spec{
		{
			// The gateway reaches auth on a private unix socket (auth.go), whose
			// x-forwarded-for alone auth believes, so lockout counts the browser's address.
			Binary: "auth", Service: "auth", GRPCPort: 7001, AdminPort: 7101, Env: authEnv,
			Settings: []string{prefixAuth, prefixDevOIDC, envAdminPassword},
		},
		{
			// Every stats call's token is checked with auth. Its sources: the suite's inventory
			// (on by default) and Ceph: the dev Ceph make up starts as root (ceph.go), or the
			// cluster of PLINTH_STATS_CEPH_URL (and Kubernetes with PLINTH_STATS_KUBECONFIG) when
			// the launcher's environment sets it: ChildEnv passes those through.
			Binary: "stats", Service: "stats", GRPCPort: 7002, AdminPort: 7102, DependsOn: []string{"auth"},
			Env: statsEnv, Needs: cephNeeds, Settings: []string{prefixStats, envAuthAddr},
		},
		{
			// Vagrant clients carry the server's own tokens; its Plinth RunnerService's and
			// SessionTokenService's tokens are checked with auth (dialled lazily: no start-order
			// dependency).
			Binary: "vagrant-server", Service: "vagrant-server", GRPCPort: 7004, AdminPort: 7104,
			// The runner has the rest of PLINTH_VAGRANT_*.
			Settings: []string{prefixVagrantJob, envVagrantJobsKept, envVagrantRunnerTTL, envVagrantSessionTTL,
				envVagrantMaxJobs, envVagrantMaxTokens, envAuthAddr},
			Env: func(_ Config, placed map[string]Placement) map[string]string {
				return map[string]string{envAuthAddr: placed["auth"].GRPC}
			},
		},
		{
			// Clusters on the local vagrant-server's netns machines; auth checks every call's token.
			// After vagrant-server (it needs a token from it), before vagrant-runner: its Prepare
			// bootstraps a fresh vagrant-server for both.
			Binary: "kaas", Service: "kaas", GRPCPort: 7003, AdminPort: 7103,
			DependsOn: []string{"auth", "vagrant-server"},
			Env:       kaasEnv, Needs: kaasNeeds,
			Settings: []string{prefixKaas, envAuthAddr},
			Prepare:  ensureKaasCredentials,
		},
		{
			// TopoLVM's node driver talks to lvmd over a unix socket; TCP 7005 (mTLS) is optional
			// and stays off until the launcher generates certificates. As root, without
			// PLINTH_LVMD_CONFIG, it gets a loop-backed volume group under HOME/lvm (lvmd.go);
			// without root it is skipped.
			Binary: "lvmd-agent", Service: "lvmd-agent", Socket: "lvmd.sock", AdminPort: 7105,
			Env: withDevS3(lvmdEnv), Prepare: ensureLvmdVG, Needs: lvmdNeeds, Settings: []string{prefixLvmd},
			Optional: "without PLINTH_LVMD_CONFIG it needs root and lvm2",
		},
		{
			// CloudNativePG dials plugins at <plugin socket dir>/<plugin name>; TCP 7006 needs
			// mTLS certificates and stays off until the launcher generates them.
			Binary: "cnpgi-plugin", Service: "cnpgi-plugin",
			Socket: filepath.Join("plugins", CNPGIPluginName), AdminPort: 7106, TLSPort: 7006,
			// With the dev Ceph, its default store is the radosgw (cnpgi.go).
			Env:      cnpgiEnv,
			Prepare:  ensureCNPGICerts,
			Settings: []string{prefixCNPGI},
		},
		{
			// The runner serves no gRPC: it dials vagrant-server and streams jobs from it.
			Binary: "vagrant-runner", Service: "vagrant-server", AdminPort: 7107, NoDatabase: true, NoNATS: true,
			DependsOn: []string{"vagrant-server"}, Needs: runnerNeeds, Settings: []string{prefixVagrant},
			Env: func(c Config, placed map[string]Placement) map[string]string {
				return map[string]string{
					envVagrantServerAddr:     placed["vagrant-server"].GRPC,
					envVagrantRunnerStateDir: runnerStateDir(c.Home),
					// kaas's jobs have slots of their own (kaasRunnerID).
					envVagrantRunnerReservedID: kaasRunnerID(c.Home),
					// Its machines are sandboxed: kaas's see the kube binaries read-only where
					// kaas names them.
					envVagrantNetnsShare: kubeBinDir(c.Root),
				}
			},
			Prepare: ensureRunnerToken,
		},
		{
			// The gateway (services/gateway): gRPC, gRPC-Web and Connect on one port, routed by
			// services/gateway/routes to the binaries above; last, so its backends are ready.
			Binary: GatewayBinary, Service: "gateway", GRPCPort: 8080, AdminPort: 8180, NoDatabase: true,
			DependsOn: routes.Backends(),
			Env:       gatewayEnv,
			Settings:  []string{prefixGateway, envAuthAddr},
		},
	}
}

// Placement is where one binary of this run listens.
type Placement struct {
	Spec Spec
	// GRPC is "127.0.0.1:PORT", "unix:///abs/path.sock", or "" for a binary without gRPC.
	GRPC string
	// Admin is the admin HTTP "127.0.0.1:PORT".
	Admin string
	// TLS is the mutual-TLS gRPC "127.0.0.1:PORT", when the spec has a TLSPort.
	TLS string
}

// Unknown binaries get ports from here on (gRPC N, admin N+100), after the table's range.
const firstDynamicPort = 7010

// Plan places the found binaries: table ports shifted by offset, unix sockets under home, and
// the next free ports for binaries the table does not know (reported in warnings). It fails
// when a table port is taken, since the upstream peers expect those exact ports.
func Plan(found []Binary, home string, offset int, isFree func(port int) bool) ([]Placement, []string, error) {
	known := Table()
	used := map[int]bool{}
	for _, s := range known {
		used[s.GRPCPort+offset], used[s.AdminPort+offset] = true, true
	}
	var placed, unknown []Placement
	var warnings []string
	for _, b := range found {
		i := slices.IndexFunc(known, func(s Spec) bool { return s.Binary == b.Name })
		if i < 0 {
			unknown = append(unknown, Placement{Spec: Spec{Binary: b.Name, Service: b.Service}})
			continue
		}
		p, err := placeKnown(known[i], home, offset, isFree)
		if err != nil {
			return nil, nil, err
		}
		placed = append(placed, p)
	}
	// Keep the table's start order whatever order the directory listing gave.
	slices.SortStableFunc(placed, func(a, b Placement) int {
		return indexOf(known, a.Spec.Binary) - indexOf(known, b.Spec.Binary)
	})
	next := firstDynamicPort + offset
	for _, p := range unknown {
		for used[next] || used[next+100] || !isFree(next) || !isFree(next+100) {
			next++
			if next >= firstDynamicPort+offset+90 {
				return nil, nil, fmt.Errorf("no free port pair left in %d-%d for %s: free some ports or use -port-offset",
					firstDynamicPort+offset, firstDynamicPort+offset+90, p.Spec.Binary)
			}
		}
		used[next], used[next+100] = true, true
		p.Spec.GRPCPort, p.Spec.AdminPort = next, next+100
		p.GRPC, p.Admin = loopback(next), loopback(next+100)
		warnings = append(warnings, fmt.Sprintf(
			"%s (services/%s) is not in the launcher's service table: running it on gRPC %s, admin %s; add it to deploy/internal/launcher/spec.go",
			p.Spec.Binary, p.Spec.Service, p.GRPC, p.Admin))
		placed = append(placed, p)
	}
	return placed, warnings, nil
}

func placeKnown(s Spec, home string, offset int, isFree func(int) bool) (Placement, error) {
	p := Placement{Spec: s}
	ports := []int{s.AdminPort}
	switch {
	case s.Socket != "":
		p.GRPC = "unix://" + filepath.Join(home, s.Socket)
	case s.GRPCPort != 0:
		p.GRPC = loopback(s.GRPCPort + offset)
		ports = append(ports, s.GRPCPort)
	}
	p.Admin = loopback(s.AdminPort + offset)
	if s.TLSPort != 0 {
		p.TLS = loopback(s.TLSPort + offset)
		ports = append(ports, s.TLSPort)
	}
	for _, port := range ports {
		if !isFree(port + offset) {
			return Placement{}, fmt.Errorf("port %d for %s is in use: stop what listens there, or run with -port-offset N (PLINTH_PORT_OFFSET) to shift every port",
				port+offset, s.Binary)
		}
	}
	return p, nil
}

func indexOf(specs []Spec, binary string) int {
	return slices.IndexFunc(specs, func(s Spec) bool { return s.Binary == binary })
}

func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
