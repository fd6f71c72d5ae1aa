package configcheck

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// composeSuperuser is the Postgres superuser, which no service may connect as.
const composeSuperuser = "postgres"

// CheckComposePostgres checks that compose's Postgres trusts no one (issue #36): its port is
// published on 127.0.0.1, which every local account reaches.
//   - no service sets POSTGRES_HOST_AUTH_METHOD (or POSTGRES_INITDB_ARGS) to trust;
//   - every PLINTH_DATABASE_URL names a role other than the superuser, holds no password, and
//     names its password file (passfile=) in a volume the service mounts read-only.
func CheckComposePostgres(p *types.Project) []error {
	var errs []error
	fail := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("service %s: %s", name, fmt.Sprintf(format, args...)))
	}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		for _, k := range []string{"POSTGRES_HOST_AUTH_METHOD", "POSTGRES_INITDB_ARGS"} {
			if v := s.Environment[k]; v != nil && strings.Contains(*v, "trust") {
				fail(name, "%s=%s lets every local account in without a password (the port is published on 127.0.0.1): use scram-sha-256", k, *v)
			}
		}
		v := s.Environment["PLINTH_DATABASE_URL"]
		if v == nil || *v == "" {
			continue
		}
		u, err := url.Parse(*v)
		if err != nil {
			continue // reported by CheckPlinthService
		}
		if user := u.User.Username(); user == "" || user == composeSuperuser {
			fail(name, "PLINTH_DATABASE_URL connects as %q: connect as the services' role, which is not a superuser", user)
		}
		if _, set := u.User.Password(); set {
			fail(name, "PLINTH_DATABASE_URL holds a password: name a pass file (passfile=) instead")
		}
		passFile := u.Query().Get("passfile")
		switch {
		case passFile == "":
			fail(name, "PLINTH_DATABASE_URL names no passfile: the password must come from a file of a mounted secret volume")
		case !mountedReadOnly(s, passFile):
			fail(name, "PLINTH_DATABASE_URL's passfile %s is in no volume the service mounts read-only", passFile)
		}
	}
	return errs
}

// mountedReadOnly reports whether file lies in a named volume s mounts read-only.
func mountedReadOnly(s types.ServiceConfig, file string) bool {
	return slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
		return v.Type == types.VolumeTypeVolume && v.ReadOnly && strings.HasPrefix(path.Clean(file), path.Clean(v.Target)+"/")
	})
}
