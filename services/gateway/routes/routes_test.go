package routes_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/plinth-dev/plinth/libs/api/access"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// TestEveryServiceIsRouted walks every gRPC service compiled into libs/api: each has a
// route, every method of it resolves, and no route names a service or method that does not
// exist (a renamed proto fails here, not at a user's first call).
func TestEveryServiceIsRouted(t *testing.T) {
	services := map[string]protoreflect.ServiceDescriptor{}
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			services[string(s.FullName())] = s
		}
		return true
	})
	routed := map[string]bool{}
	for _, r := range routes.Table {
		routed[r.Service] = true
	}
	if len(services) < len(routed) {
		t.Fatalf("only %d services registered: a libs/api import is missing", len(services))
	}
	for name, s := range services {
		if slices.Contains(routes.GatewayServices, name) {
			continue
		}
		if isSDK(s) {
			continue
		}
		for i := range s.Methods().Len() {
			m := s.Methods().Get(i)
			r, ok := routes.Lookup("/" + name + "/" + string(m.Name()))
			if !ok || !slices.Contains(routes.Backends(), r.Backend) {
				t.Errorf("%s/%s: no route (%+v)", name, m.Name(), r)
			}
		}
	}
	for _, r := range routes.Table {
		s, ok := services[r.Service]
		if !ok {
			t.Errorf("route %s names a service libs/api does not have", r.Path())
			continue
		}
		if r.Method != "" && s.Methods().ByName(protoreflect.Name(r.Method)) == nil {
			t.Errorf("route %s names a method %s does not have", r.Path(), r.Service)
		}
	}
}

// isSDK: the vagrant SDK subset's plugin services are served by plugins, not by the suite.
func isSDK(s protoreflect.ServiceDescriptor) bool {
	return s.ParentFile().Package() == "hashicorp.vagrant.sdk"
}

func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		path    string
		backend string
		access  routes.Access
		ok      bool
	}{
		{"/services.auth.AuthService/Login", routes.Auth, routes.Public, true},
		{"/services.auth.AuthService/CheckToken", routes.Auth, routes.Public, true},
		{"/services.auth.AuthService/Logout", routes.Auth, routes.Token, true},
		{"/api.services.auth.v1.AuthService/Login", routes.Auth, routes.Public, true},
		{"/api.services.auth.v1.AuthService/CheckToken", routes.Auth, routes.Public, true},
		{"/api.services.auth.v1.AuthService/Logout", routes.Auth, routes.Token, true},
		{"/api.services.stats.v1.StatsService/ListClusterRecommendations", routes.Stats, routes.Token, true},
		{"/plinth.auth.v1.AdminService/ListUsers", routes.Auth, routes.Token, true},
		{"/hashicorp.vagrant.Vagrant/RunnerJobStream", routes.VagrantServer, routes.Own, true},
		{"/proto.LVService/CreateLV", routes.LvmdAgent, routes.Token, true},
		{"/plinth.lvmd.v1.JobService/ListJobs", routes.LvmdAgent, routes.Token, true},
		{"/plinth.lvmd.v1.VolumeService/GetVolume", routes.LvmdAgent, routes.Token, true},
		{"/cnpgi.wal.v1.RestoreJobHooks/Restore", routes.CNPGIPlugin, routes.Token, true},
		{"/plinth.cnpgi.v1.CatalogService/GetServer", routes.CNPGIPlugin, routes.Token, true},
		{"/plinth.stats.v1.HistoryService/GetCapacityHistory", routes.Stats, routes.Token, true},
		{"/plinth.stats.v1.ClusterService/GetClusterDetail", routes.Stats, routes.Token, true},
		{"/plinth.vagrant.v1.RunnerService/ListRunners", routes.VagrantServer, routes.Token, true},
		{"/plinth.kaas.v1.ClusterInfoService/GetClusterInfo", routes.Kaas, routes.Token, true},
		{"/plinth.vagrant.v1.SessionTokenService/IssueSessionToken", routes.VagrantServer, routes.Token, true},
		{"/services.auth.AuthService/", "", 0, false},
		{"/services.auth.AuthService/Login/x", "", 0, false},
		{"services.auth.AuthService/Login", "", 0, false},
		{"/no.Such/Method", "", 0, false},
		{"", "", 0, false},
	} {
		r, ok := routes.Lookup(tt.path)
		if ok != tt.ok || r.Backend != tt.backend || (ok && r.Access != tt.access) {
			t.Errorf("Lookup(%q) = %+v %v, want %s %s %v", tt.path, r, ok, tt.backend, tt.access, tt.ok)
		}
	}
}

// TestUnaryTimeouts: a WAL archive may take minutes, so cnpgi-plugin's unary calls get more
// than the default; every other backend gets the default.
func TestUnaryTimeouts(t *testing.T) {
	for _, b := range routes.Backends() {
		got := routes.UnaryTimeout(b)
		want := routes.DefaultUnaryTimeout
		if b == routes.CNPGIPlugin {
			want = 15 * time.Minute
		}
		if got != want {
			t.Errorf("UnaryTimeout(%s) = %v, want %v", b, got, want)
		}
	}
}

func TestMaxRequestBytes(t *testing.T) {
	for _, b := range routes.Backends() {
		// Every backend keeps grpc-go's default receive limit; a backend that raises it
		// must say so in maxRequestBytes, or the gateway refuses what it would take.
		if n := routes.MaxRequestBytes(b); n != routes.DefaultMaxRequestBytes || n > routes.LargestRequestBytes() {
			t.Errorf("%s: %d (largest %d)", b, n, routes.LargestRequestBytes())
		}
	}
	if routes.DefaultMaxRequestBytes != 4<<20 {
		t.Errorf("default %d, want grpc-go's 4 MiB", routes.DefaultMaxRequestBytes)
	}
}

// TestEveryMethodHasAKind prints what each role may call (each method's kind is declared
// beside its API's generated code and checked there: libs/api/access) and checks that every
// routed method is declared.
func TestEveryMethodHasAKind(t *testing.T) {
	counts := map[authz.Kind]int{}
	for _, r := range routes.Table {
		if r.Access != routes.Token || r.Method != "" {
			continue
		}
		sd, err := routes.ServiceDescriptor(r.Service)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sd.Methods().Len() {
			m := "/" + r.Service + "/" + string(sd.Methods().Get(i).Name())
			k, ok := access.Of(m)
			if !ok {
				t.Errorf("%s is routed but has no declared kind", m)
			}
			counts[k]++
			t.Logf("%-60s %s", m, k)
		}
	}
	if counts[authz.Read] == 0 || counts[authz.Write] == 0 || counts[authz.UserAdmin] == 0 {
		t.Errorf("kinds %v: every kind should have methods", counts)
	}
}
