package hostiletest

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// RunRole calls every method of tg.Services once, with an empty request and tg.Metadata (the
// token of a user whose role is role), as a signed-in user trying what their role does not
// allow: each method role may not call (authz.Check: a viewer's writes, anyone but an admin's
// user administration) must be refused with PermissionDenied naming the method, before the
// handler runs; each method it may call must not be refused for the role. Methods about the
// caller's own session (authz.Session: Logout would end the probe's token) are not called.
func RunRole(t *testing.T, tg Target, role authz.Role) {
	t.Helper()
	if tg.Timeout == 0 {
		tg.Timeout = 10 * time.Second
	}
	skip := map[string]bool{}
	for _, m := range tg.Skip {
		skip[m] = true
	}
	refused, allowed := 0, 0
	for _, name := range tg.Services {
		methods := serviceMethods(t, name)
		for i := range methods.Len() {
			md := methods.Get(i)
			full := "/" + name + "/" + string(md.Name())
			if skip[full] || authz.MethodKind(full) == authz.Session {
				continue
			}
			code, msg := call(tg, full, md, dynamicpb.NewMessage(md.Input()), tg.Metadata)
			if authz.Check(role, full) != nil {
				refused++
				if code != codes.PermissionDenied || !strings.Contains(msg, full) {
					t.Errorf("%s calling %s (%s): answered %v %q; want PermissionDenied naming the method", role, full, authz.MethodKind(full), code, clip(msg))
				}
				continue
			}
			allowed++
			if code == codes.PermissionDenied || code == codes.Unauthenticated {
				t.Errorf("%s calling %s (%s): answered %v %q; the role may call it", role, full, authz.MethodKind(full), code, clip(msg))
			}
		}
	}
	t.Logf("role %s: %d methods refused, %d allowed", role, refused, allowed)
	assertServing(t, tg)
}
