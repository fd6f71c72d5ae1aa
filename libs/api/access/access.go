// Package access is where each API declares what its methods do as far as roles go: every
// gRPC method has one kind (read, write, a call about the caller's own session, or user
// administration), declared beside the API's generated code (the access.go of its package in
// libs/api) and nowhere else. libs/platform/authz maps roles to kinds; the gateway, auth's
// ext_authz for Envoy and each service's interceptor all read the kinds here, so the three
// cannot disagree, and a method added to a proto without a kind fails TestEveryMethodIsDeclared
// instead of silently becoming a write (refused to viewers).
package access

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind is what a method does, as far as permissions go.
type Kind int

const (
	// Write changes something or starts work. A method nobody declared is treated as one.
	Write Kind = iota
	// Read only reads: gets, lists, watches, capabilities, metrics.
	Read
	// Session concerns the caller's own session (sign out, check a token): any signed-in user.
	Session
	// UserAdmin manages users, or makes credentials that outlive the caller's session: admins only.
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

// Written only by Declare from package init functions, which run one at a time before main:
// every later read (one per call, in authz) needs no lock.
var (
	methods  = map[string]Kind{} // "/pkg.Service/Method" → kind
	services = map[string]bool{}
)

// Declare records the kind of each method of service (its full name, "proto.LVService"),
// keyed by the method's name. Each API package calls it from init (and only there) for each of its services;
// declaring a service twice, or a name that is not a method name, panics (a programming error
// found by any test that links the package).
func Declare(service string, kinds map[string]Kind) {
	if services[service] || service == "" || strings.ContainsAny(service, "/ ") {
		panic(fmt.Sprintf("access: service %q declared twice or malformed", service))
	}
	services[service] = true
	for name, k := range kinds {
		if name == "" || strings.ContainsAny(name, "/. ") || k < Write || k > UserAdmin {
			panic(fmt.Sprintf("access: %s: bad method %q or kind %d", service, name, k))
		}
		methods["/"+service+"/"+name] = k
	}
}

// Of is the declared kind of a full method ("/pkg.Service/Method") and whether it is declared.
func Of(fullMethod string) (Kind, bool) {
	k, ok := methods[fullMethod]
	return k, ok
}

// Methods is every declared full method with its kind.
func Methods() map[string]Kind {
	return maps.Clone(methods)
}

// Services lists the services that declared their methods, sorted.
func Services() []string {
	return slices.Sorted(maps.Keys(services))
}
