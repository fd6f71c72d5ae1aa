package envoygen

import (
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/gateway/routes"
)

func TestPlanOrder(t *testing.T) {
	table := []routes.Route{
		{Service: "services.auth.AuthService", Method: "Login", Backend: routes.Auth, Access: routes.Public},
		{Service: "services.auth.AuthService", Backend: routes.Auth, Access: routes.Token},
		{Service: "hashicorp.vagrant.Vagrant", Method: "GetJobStream", Backend: routes.VagrantServer, Access: routes.Own},
		{Service: "hashicorp.vagrant.Vagrant", Backend: routes.VagrantServer, Access: routes.Own},
	}
	rs, err := Plan(table, []string{"grpc.reflection.v1.ServerReflection"})
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, r := range rs {
		index[r.Path] = i
	}
	for _, tc := range []struct{ before, after string }{
		{"/services.auth.AuthService/Login", "/services.auth.AuthService/"},
		{"/hashicorp.vagrant.Vagrant/GetJobStream", "/hashicorp.vagrant.Vagrant/"},
		{"/hashicorp.vagrant.Vagrant/RunnerJobStream", "/hashicorp.vagrant.Vagrant/"},
	} {
		b, okb := index[tc.before]
		a, oka := index[tc.after]
		if !okb || !oka || b > a {
			t.Errorf("%s (%d, %v) must come before %s (%d, %v)", tc.before, b, okb, tc.after, a, oka)
		}
	}
	// The table's method route keeps its own place: it is not emitted twice as a stream.
	if n := len(slices.DeleteFunc(paths(rs), func(p string) bool { return p != "/hashicorp.vagrant.Vagrant/GetJobStream" })); n != 1 {
		t.Errorf("GetJobStream routed %d times", n)
	}
	want := map[string]Route{
		"/services.auth.AuthService/Login":          {Backend: routes.Auth, Public: true},
		"/services.auth.AuthService/":               {Backend: routes.Auth, Prefix: true},
		"/grpc.reflection.v1.ServerReflection/":     {Backend: routes.Auth, Prefix: true, Public: true, Streaming: true},
		"/hashicorp.vagrant.Vagrant/GetJobStream":   {Backend: routes.VagrantServer, Public: true, Streaming: true},
		"/hashicorp.vagrant.Vagrant/GetLogStream":   {Backend: routes.VagrantServer, Public: true, Streaming: true},
		"/hashicorp.vagrant.Vagrant/":               {Backend: routes.VagrantServer, Prefix: true, Public: true},
		"/hashicorp.vagrant.Vagrant/RunnerConfig":   {Backend: routes.VagrantServer, Public: true, Streaming: true},
		"/hashicorp.vagrant.Vagrant/GetVersionInfo": {},
	}
	// Then every route again under /api, in the same order, rewritten to its own path.
	n := len(rs) / 2
	for i, r := range rs[:n] {
		tw := rs[n+i]
		if want := (Route{Path: routes.APIPrefix + r.Path, Prefix: r.Prefix, Backend: r.Backend, Public: r.Public, Access: r.Access, Streaming: r.Streaming, Rewrite: r.Path}); r.Rewrite != "" || tw != want {
			t.Errorf("twin of %+v: %+v, want %+v", r, tw, want)
		}
	}
	for p, w := range want {
		i, ok := index[p]
		if w.Backend == "" {
			if ok {
				t.Errorf("%s has a route of its own; a unary method goes by its service's prefix", p)
			}
			continue
		}
		if !ok {
			t.Errorf("no route %s", p)
			continue
		}
		got := rs[i]
		if got.Backend != w.Backend || got.Prefix != w.Prefix || got.Public != w.Public || got.Streaming != w.Streaming {
			t.Errorf("%s: %+v, want %+v", p, got, w)
		}
	}
}

func paths(rs []Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

func TestPlanRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table []routes.Route
		want  string
	}{
		{"unknown service", []routes.Route{{Service: "no.Such", Backend: routes.Auth}}, "no such gRPC service"},
		{"unknown method", []routes.Route{{Service: "services.auth.AuthService", Method: "Nope", Backend: routes.Auth}}, "has no method Nope"},
		{"not a service", []routes.Route{{Service: "services.auth.LoginRequest", Backend: routes.Auth}}, "not a gRPC service"},
		{"twice", []routes.Route{{Service: "stats.StatsService", Backend: routes.Stats}, {Service: "stats.StatsService", Backend: routes.Stats}}, "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.table, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestRenderRefusesAMissingAddress(t *testing.T) {
	env := Compose()
	delete(env.Backends, routes.Kaas)
	if _, err := Render(env, routes.Table, routes.GatewayServices); err == nil || !strings.Contains(err.Error(), "no address for backend kaas") {
		t.Fatalf("got %v", err)
	}
	env = Compose()
	a := env.Backends[routes.LvmdAgent]
	a.TLS = &ClientTLS{CertFile: "c", KeyFile: "k", CAFile: "ca"}
	env.Backends[routes.LvmdAgent] = a
	if _, err := Render(env, routes.Table, routes.GatewayServices); err == nil || !strings.Contains(err.Error(), "mutual TLS needs") {
		t.Fatalf("got %v", err)
	}
}
