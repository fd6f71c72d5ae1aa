package configcheck

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/plinth-dev/plinth/libs/platform/events"
)

// NATSConfig is the NATS server configuration compose mounts, generated from events.Suite
// (deploy/internal/natsconf).
const NATSConfig = "deploy/docker/nats/plinth.conf"

// natsPasswordDir is where a service's own nats-<user> volume is mounted.
const natsPasswordDir = "/run/secrets/nats"

// CheckComposeNATS checks that compose's NATS grants what `make up`'s does (events.Suite):
//   - the nats service runs nats-server with the generated NATSConfig, and generates a
//     password for exactly the suite's users, each in its own volume nats-<user>;
//   - every service with PLINTH_NATS_URL connects as a suite service user
//     (PLINTH_NATS_USER) with PLINTH_NATS_PASSWORD_FILE in that user's volume, mounted
//     read-only, and no other user's password volume.
func CheckComposeNATS(p *types.Project, root string) error {
	var errs []error
	users := events.SuiteUsers()
	nats, ok := p.Services["nats"]
	if !ok {
		return errors.New("no nats service")
	}
	script := strings.Join(nats.Command, " ")
	if !strings.Contains(script, "nats-server -c /etc/nats/plinth.conf") {
		errs = append(errs, errors.New("nats: does not run nats-server -c /etc/nats/plinth.conf"))
	}
	conf := false
	mounted := map[string]bool{}
	for _, v := range nats.Volumes {
		switch {
		case v.Type == types.VolumeTypeBind && v.Target == "/etc/nats/plinth.conf":
			conf = v.Source == filepath.Join(root, NATSConfig)
		case v.Type == types.VolumeTypeVolume && strings.HasPrefix(v.Source, "nats-"):
			u := strings.TrimPrefix(v.Source, "nats-")
			if v.Target != "/etc/nats/users/"+u {
				errs = append(errs, fmt.Errorf("nats: volume %s is mounted at %s, want /etc/nats/users/%s", v.Source, v.Target, u))
			}
			mounted[u] = true
		}
	}
	if !conf {
		errs = append(errs, fmt.Errorf("nats: /etc/nats/plinth.conf is not a bind mount of %s", NATSConfig))
	}
	if got := slices.Sorted(maps.Keys(mounted)); !slices.Equal(got, slices.Sorted(slices.Values(users))) {
		errs = append(errs, fmt.Errorf("nats: password volumes for %v, want one per suite user %v", got, users))
	}
	loop := ""
	for _, line := range strings.Split(script, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "for u in ") {
			loop = strings.TrimSuffix(strings.TrimPrefix(l, "for u in "), "; do")
		}
	}
	if got := slices.Sorted(slices.Values(strings.Fields(loop))); !slices.Equal(got, slices.Sorted(slices.Values(users))) {
		errs = append(errs, fmt.Errorf("nats: generates passwords for %v, want the suite's users %v", got, users))
	}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if _, ok := s.Environment["PLINTH_NATS_URL"]; ok {
			errs = append(errs, checkNATSClient(s)...)
		}
	}
	return errors.Join(errs...)
}

func checkNATSClient(s types.ServiceConfig) []error {
	env := func(k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	user := env("PLINTH_NATS_USER")
	if _, ok := events.AccessOf(user); !ok || user == events.AdminUser {
		return []error{fmt.Errorf("service %s: PLINTH_NATS_USER %q is not a service user of events.Suite", s.Name, user)}
	}
	var errs []error
	if f := env("PLINTH_NATS_PASSWORD_FILE"); f != natsPasswordDir+"/password" {
		errs = append(errs, fmt.Errorf("service %s: PLINTH_NATS_PASSWORD_FILE %q, want %s/password", s.Name, f, natsPasswordDir))
	}
	own := false
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeVolume || !strings.HasPrefix(v.Source, "nats-") {
			continue
		}
		if v.Source != "nats-"+user || v.Target != natsPasswordDir || !v.ReadOnly {
			errs = append(errs, fmt.Errorf("service %s (NATS user %s) mounts %s at %s (read-only %v): want only nats-%s at %s, read-only",
				s.Name, user, v.Source, v.Target, v.ReadOnly, user, natsPasswordDir))
			continue
		}
		own = true
	}
	if !own {
		errs = append(errs, fmt.Errorf("service %s: does not mount its password volume nats-%s at %s", s.Name, user, natsPasswordDir))
	}
	return errs
}
