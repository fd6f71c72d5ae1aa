package composeup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../../../docker-compose.yaml"

// loadWithOverride loads the committed file and an override as `docker compose -f -f` does.
func loadWithOverride(t *testing.T, override []byte) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir: filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{
			{Filename: abs, Content: content},
			{Filename: filepath.Join(filepath.Dir(abs), ".plinth/compose/t/override.yaml"), Content: override},
		},
		Environment: map[string]string{},
	}, func(o *loader.Options) { o.Profiles = []string{"*"} })
	if err != nil {
		t.Fatalf("the file with the override does not load: %v\n%s", err, override)
	}
	return p
}

// TestOverrideShiftsEveryPublishedPort: with the override, every service publishes exactly
// its ports of the committed file, each moved by the offset, on 127.0.0.1 only (the
// `!override` replaces the lists instead of appending to them, so 5432 and 4222 are gone).
func TestOverrideShiftsEveryPublishedPort(t *testing.T) {
	base, err := LoadFile(context.Background(), composeFile, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	const offset = -3000
	ports, err := ShiftPorts(base, offset)
	if err != nil {
		t.Fatal(err)
	}
	got := loadWithOverride(t, Override(ports, BuiltServices(base), nil))
	n := 0
	for name, s := range base.Services {
		moved := got.Services[name].Ports
		if len(moved) != len(s.Ports) {
			t.Fatalf("%s publishes %d ports with the override, %d without", name, len(moved), len(s.Ports))
		}
		for i, pc := range s.Ports {
			want := atoi(t, pc.Published) + offset
			if m := moved[i]; m.Published != strconv.Itoa(want) || m.Target != pc.Target || m.HostIP != "127.0.0.1" {
				t.Errorf("%s port %d: got %s:%s:%d, want 127.0.0.1:%d:%d", name, i, m.HostIP, m.Published, m.Target, want, pc.Target)
			}
			n++
		}
	}
	if n < 15 {
		t.Fatalf("only %d published ports: the file's services were not all seen", n)
	}
	// Every built service's image has the default project's name, whatever the project.
	built := BuiltServices(base)
	if !slices.Contains(built, "auth") || !slices.Contains(built, "lvmd-agent") || slices.Contains(built, "postgres") {
		t.Fatalf("built services %v", built)
	}
	for _, name := range built {
		if img := got.Services[name].Image; img != "plinth-"+name {
			t.Errorf("%s's image is %q, want plinth-%s", name, img, name)
		}
	}
	if img := got.Services["postgres"].Image; img != "postgres:15" {
		t.Errorf("postgres's image became %q", img)
	}
	// The network is the file's when no subnet is asked for.
	if s := got.Networks["default"].Ipam.Config[0].Subnet; s != "172.29.71.0/24" {
		t.Fatalf("subnet %s without -subnet", s)
	}
}

func TestShiftPortsRefusesPortsOutsideTheRange(t *testing.T) {
	base, err := LoadFile(context.Background(), composeFile, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	for _, offset := range []int{-4000, 30000} {
		_, err := ShiftPorts(base, offset)
		if err == nil || !strings.Contains(err.Error(), "PLINTH_COMPOSE_PORT_OFFSET") {
			t.Errorf("offset %d: %v, want an error naming PLINTH_COMPOSE_PORT_OFFSET", offset, err)
		}
	}
	if _, err := ShiftPorts(base, DefaultOffset); err != nil {
		t.Errorf("the default offset: %v", err)
	}
}

// TestOverrideMovesTheNetwork: a second stack's subnet replaces the file's, and trusts no
// address in it (auth believes x-forwarded-for only over its gateway listener).
func TestOverrideMovesTheNetwork(t *testing.T) {
	base, err := LoadFile(context.Background(), composeFile, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := MoveNetwork(base, "172.29.72.0/24")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := ShiftPorts(base, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := loadWithOverride(t, Override(ports, nil, &n))
	if s := got.Networks["default"].Ipam.Config; len(s) != 1 || s[0].Subnet != "172.29.72.0/24" {
		t.Fatalf("ipam config %+v", s)
	}
	if n := got.Services["gateway"].Networks["default"]; n != nil && n.Ipv4Address != "" {
		t.Fatalf("gateway has the fixed address %s", n.Ipv4Address)
	}
	if tp := got.Services["auth"].Environment["PLINTH_AUTH_TRUSTED_PROXIES"]; tp != nil {
		t.Fatalf("auth trusts %s", *tp)
	}
	if got.Services["auth"].Environment["PLINTH_AUTH_GATEWAY_ADDR"] == nil {
		t.Fatal("auth's gateway listener was dropped")
	}
	for _, bad := range []string{"10.0.0.0/25", "172.29.72.1/24", "fd00::/64", "nope"} {
		if _, err := MoveNetwork(base, bad); err == nil {
			t.Errorf("-subnet %s accepted", bad)
		}
	}
}

func TestVGIsNeitherMakeUpsNorAnotherProjects(t *testing.T) {
	if VG("plinth") == "plinth" || VG("plinth") == VG("e2e-compose") {
		t.Fatalf("VG names %s, %s", VG("plinth"), VG("e2e-compose"))
	}
	if VG("e2e-compose") != "compose_e2e_compose" {
		t.Fatalf("VG(e2e-compose) = %s", VG("e2e-compose"))
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("port %q: %v", s, err)
	}
	return n
}
