// Package authz says what a signed-in user may call: every user has one role (viewer, operator
// or admin), every gRPC method one kind (read, write, admin, or a call about the caller's own
// session), and a role allows some kinds. The gateway, Envoy's ext_authz (answered by auth) and
// each service's interceptor all ask MethodKind and Role.Allows, so the three cannot disagree.
//
// Each API declares its methods' kinds beside its generated code (libs/api/access): a binary
// knows the kinds of the APIs it links (a service its own; the gateway and auth's ext_authz
// every API, through libs/api/all). A method no linked API declares is a write.
package authz

import (
	"fmt"
	"strings"

	"github.com/plinth-dev/plinth/libs/api/access"
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

// Kind is what a method does, as far as permissions go; each API declares its methods'
// kinds beside its generated code (libs/api/access).
type Kind = access.Kind

// The kinds (libs/api/access).
const (
	Write     = access.Write
	Read      = access.Read
	Session   = access.Session
	UserAdmin = access.UserAdmin
)

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

// MethodKind is the kind of a full method ("/pkg.Service/Method") as its API declares it
// (libs/api/access); a method no linked API declares is a Write.
func MethodKind(fullMethod string) Kind {
	k, _ := access.Of(fullMethod)
	return k
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
