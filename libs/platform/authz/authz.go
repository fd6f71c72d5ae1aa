// Package authz says what a signed-in user may call: every user has one role (viewer, operator
// or admin), every gRPC method one kind (read, write, admin, or a call about the caller's own
// session), and a role allows some kinds. The gateway, Envoy's ext_authz (answered by auth) and
// each service's interceptor all ask MethodKind and Role.Allows, so the three cannot disagree.
//
// Methods are writes unless listed: a method added to an API later is refused to viewers until
// someone decides it only reads.
package authz

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Role is what a user may do.
type Role string

const (
	// Viewer may call read methods (lists, gets, watches, metrics) and sign out.
	Viewer Role = "viewer"
	// Operator may call everything but user administration: create and delete clusters and
	// volumes, archive WAL, take backups. Upstream clients (CloudNativePG's operator, TopoLVM,
	// CNCT's scripts) work with an operator's token.
	Operator Role = "operator"
	// Admin may also manage users (plinth.auth.v1.AdminService).
	Admin Role = "admin"
)

// ParseRole accepts a role's name in any case; an unknown name is an error listing the roles.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	switch r {
	case Viewer, Operator, Admin:
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q: one of viewer, operator, admin", s)
}

// Kind is what a method does, as far as permissions go.
type Kind int

const (
	// Write changes something or starts work (the default for a method not listed).
	Write Kind = iota
	// Read only reads: gets, lists, watches, capabilities, metrics.
	Read
	// Session concerns the caller's own session (sign out, check a token): any signed-in user.
	Session
	// UserAdmin manages users: admins only.
	UserAdmin
)

func (k Kind) String() string {
	switch k {
	case Read:
		return "read"
	case Session:
		return "session"
	case UserAdmin:
		return "user administration"
	}
	return "write"
}

// Allows reports whether the role may call a method of kind k.
func (r Role) Allows(k Kind) bool {
	switch r {
	case Admin:
		return true
	case Operator:
		return k != UserAdmin
	case Viewer:
		return k == Read || k == Session
	}
	return false
}

// wholeServices are the services whose every method has one kind.
var wholeServices = map[string]Kind{
	"services.auth.AuthService":         Session,
	"plinth.auth.v1.AdminService":       UserAdmin,
	"stats.StatsService":                Read,
	"plinth.stats.v1.HistoryService":    Read,
	"plinth.stats.v1.ClusterService":    Read,
	"plinth.vagrant.v1.RunnerService":   Read,
	"plinth.kaas.v1.ClusterInfoService": Read,
	// A Vagrant token for the caller's own session, carrying the caller's role.
	"plinth.vagrant.v1.SessionTokenService": Session,
	"proto.VGService":                       Read,
	"plinth.lvmd.v1.JobService":             Read,
	"plinth.lvmd.v1.VolumeService":          Read,
	"plinth.cnpgi.v1.CatalogService":        Read,
	"cnpgi.identity.v1.Identity":            Read,
	"cnpgi.metrics.v1.Metrics":              Read,
}

// readMethods are the read methods of services that also write.
var readMethods = map[string]bool{
	"/cnct.kaas.api.Cluster/GetCluster":                   true,
	"/cnct.kaas.api.Cluster/GetClusterList":               true,
	"/cnct.kaas.api.Cluster/GetClusterNodesStatus":        true,
	"/cnct.kaas.api.Cluster/GetUpgradeClusterInformation": true,
	"/cnct.kaas.api.Cluster/GetVersionInformation":        true,

	"/cnpgi.backup.v1.Backup/GetCapabilities":                        true,
	"/cnpgi.identity.v1.Postgres/GetCapabilities":                    true,
	"/cnpgi.operator.v1.Operator/GetCapabilities":                    true,
	"/cnpgi.operator_lifecycle.v1.OperatorLifecycle/GetCapabilities": true,
	"/cnpgi.reconciler.v1.ReconcilerHooks/GetCapabilities":           true,
	"/cnpgi.wal.v1.RestoreJobHooks/GetCapabilities":                  true,
	"/cnpgi.wal.v1.WAL/GetCapabilities":                              true,
	"/cnpgi.wal.v1.WAL/Status":                                       true,

	// Vagrant's API keeps its own tokens at the gateway (routes.Own); vagrant-server asks these
	// tables only for the session tokens it issues to Plinth users, which carry their role.
	"/hashicorp.vagrant.Vagrant/GetVersionInfo": true,
	"/hashicorp.vagrant.Vagrant/GetBasis":       true,
	"/hashicorp.vagrant.Vagrant/FindBasis":      true,
	"/hashicorp.vagrant.Vagrant/ListBasis":      true,
	"/hashicorp.vagrant.Vagrant/GetProject":     true,
	"/hashicorp.vagrant.Vagrant/FindProject":    true,
	"/hashicorp.vagrant.Vagrant/ListProjects":   true,
	"/hashicorp.vagrant.Vagrant/GetTarget":      true,
	"/hashicorp.vagrant.Vagrant/FindTarget":     true,
	"/hashicorp.vagrant.Vagrant/ListTargets":    true,
	"/hashicorp.vagrant.Vagrant/GetBox":         true,
	"/hashicorp.vagrant.Vagrant/FindBox":        true,
	"/hashicorp.vagrant.Vagrant/ListBoxes":      true,
	"/hashicorp.vagrant.Vagrant/GetLogStream":   true,
	"/hashicorp.vagrant.Vagrant/GetJob":         true,
	"/hashicorp.vagrant.Vagrant/_ListJobs":      true,
	"/hashicorp.vagrant.Vagrant/ValidateJob":    true, // queues nothing
	"/hashicorp.vagrant.Vagrant/GetJobStream":   true,
	"/hashicorp.vagrant.Vagrant/GetRunner":      true,
}

// credentialMethods make credentials that outlive the caller's session (Vagrant login tokens
// never expire): user administration, so a session token of an operator cannot turn itself
// into a token that survives sign-out.
var credentialMethods = map[string]bool{
	"/hashicorp.vagrant.Vagrant/GenerateLoginToken":  true,
	"/hashicorp.vagrant.Vagrant/GenerateInviteToken": true,
}

// MethodKind is the kind of a full method ("/pkg.Service/Method"). A method no table lists is
// a Write.
func MethodKind(fullMethod string) Kind {
	service, _, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if k, ok := wholeServices[service]; ok {
		return k
	}
	if readMethods[fullMethod] {
		return Read
	}
	if credentialMethods[fullMethod] {
		return UserAdmin
	}
	return Write
}

// APIPrefix is the path prefix under which both gateways also serve every call: Koor
// data-control-center's web UI calls "/api/stats.StatsService/GetClusterStats" (its Connect
// base URL is "/api"), which is the call "/stats.StatsService/GetClusterStats". Envoy rewrites
// the path only after ext_authz has seen it, so auth's ext_authz takes it off too.
const APIPrefix = "/api"

// TrimAPIPrefix returns the call path p names under APIPrefix ("/api/pkg.Service/Method" →
// "/pkg.Service/Method"), and whether p was under it. Only the literal prefix followed by a
// slash counts ("/api", "/apix/…" and "/api%2F…" are not under it); what follows is left as
// it is, so a path matches a route only if the same path without the prefix would.
func TrimAPIPrefix(p string) (string, bool) {
	if !strings.HasPrefix(p, APIPrefix+"/") {
		return p, false
	}
	return p[len(APIPrefix):], true
}

// Check is nil when role may call fullMethod, else an error for a PermissionDenied status
// naming the role, the method and its kind.
func Check(role Role, fullMethod string) error {
	k := MethodKind(fullMethod)
	if role.Allows(k) {
		return nil
	}
	if role == "" {
		role = "(none)"
	}
	return fmt.Errorf("role %s may not call %s (%s)", role, fullMethod, k)
}

// ListedServices is the table of services with one kind, for tests that check every entry
// names a real service.
func ListedServices() map[string]Kind { return maps.Clone(wholeServices) }

// ListedReadMethods lists the read methods of the services that also write.
func ListedReadMethods() []string { return slices.Sorted(maps.Keys(readMethods)) }
