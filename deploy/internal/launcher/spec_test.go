package launcher

import (
	"strings"
	"testing"
)

func allFree(int) bool { return true }

func TestPlanKnownBinariesUseTablePortsShiftedByOffset(t *testing.T) {
	found := []Binary{
		{Service: "vagrant-server", Name: "vagrant-runner"}, // listed before its server on purpose
		{Service: "auth", Name: "auth"},
		{Service: "cnpgi-plugin", Name: "cnpgi-plugin"},
		{Service: "lvmd-agent", Name: "lvmd-agent"},
		{Service: "vagrant-server", Name: "vagrant-server"},
	}
	placed, warnings, err := Plan(found, "/h", 1000, allFree)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings for known binaries: %v", warnings)
	}
	want := []struct{ name, grpc, admin string }{
		{"auth", "127.0.0.1:8001", "127.0.0.1:8101"},
		{"vagrant-server", "127.0.0.1:8004", "127.0.0.1:8104"},
		{"lvmd-agent", "unix:///h/lvmd.sock", "127.0.0.1:8105"},
		{"cnpgi-plugin", "unix:///h/plugins/" + CNPGIPluginName, "127.0.0.1:8106"},
		{"vagrant-runner", "", "127.0.0.1:8107"},
	}
	if len(placed) != len(want) {
		t.Fatalf("placed %d binaries, want %d", len(placed), len(want))
	}
	for i, w := range want {
		p := placed[i]
		if p.Spec.Binary != w.name || p.GRPC != w.grpc || p.Admin != w.admin {
			t.Errorf("placed[%d] = %s grpc=%q admin=%q, want %s grpc=%q admin=%q",
				i, p.Spec.Binary, p.GRPC, p.Admin, w.name, w.grpc, w.admin)
		}
	}
}

func TestPlanFailsWhenATablePortIsTaken(t *testing.T) {
	taken := func(port int) bool { return port != 7101 }
	_, _, err := Plan([]Binary{{Service: "auth", Name: "auth"}}, "/h", 0, taken)
	if err == nil || !strings.Contains(err.Error(), "port 7101") || !strings.Contains(err.Error(), "-port-offset") {
		t.Fatalf("err = %v, want a message naming port 7101 and -port-offset", err)
	}
}

func TestPlanSocketServicesNeedOnlyTheirAdminPort(t *testing.T) {
	// 7005 is lvmd-agent's optional TCP port, which the launcher does not use.
	taken := func(port int) bool { return port != 7005 }
	if _, _, err := Plan([]Binary{{Service: "lvmd-agent", Name: "lvmd-agent"}}, "/h", 0, taken); err != nil {
		t.Fatal(err)
	}
}

func TestPlanUnknownBinariesGetNextFreePortsAndAWarning(t *testing.T) {
	isFree := func(port int) bool { return port != 7010 && port != 7111 }
	found := []Binary{{Service: "x", Name: "alpha"}, {Service: "x", Name: "beta"}, {Service: "auth", Name: "auth"}}
	placed, warnings, err := Plan(found, "/h", 0, isFree)
	if err != nil {
		t.Fatal(err)
	}
	if placed[0].Spec.Binary != "auth" {
		t.Errorf("known binaries first, got %s", placed[0].Spec.Binary)
	}
	// 7010 is taken, then 7011's admin 7111 is taken: alpha gets 7012, beta 7013.
	if placed[1].GRPC != "127.0.0.1:7012" || placed[1].Admin != "127.0.0.1:7112" {
		t.Errorf("alpha at %s/%s, want 7012/7112", placed[1].GRPC, placed[1].Admin)
	}
	if placed[2].GRPC != "127.0.0.1:7013" || placed[2].Admin != "127.0.0.1:7113" {
		t.Errorf("beta at %s/%s, want 7013/7113", placed[2].GRPC, placed[2].Admin)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "alpha") || !strings.Contains(warnings[0], "spec.go") {
		t.Errorf("warnings = %q, want one per unknown binary pointing at spec.go", warnings)
	}
}

func TestPlanUnknownBinariesNeverTakeTablePorts(t *testing.T) {
	placed, _, err := Plan([]Binary{{Service: "x", Name: "alpha"}}, "/h", -3000, allFree)
	if err != nil {
		t.Fatal(err)
	}
	if placed[0].GRPC != "127.0.0.1:4010" {
		t.Errorf("alpha at %s, want the first dynamic port 4010", placed[0].GRPC)
	}
}

func TestTableIsConsistent(t *testing.T) {
	seenPorts := map[int]string{}
	seenNames := map[string]bool{}
	for _, s := range Table() {
		if seenNames[s.Binary] {
			t.Errorf("%s listed twice", s.Binary)
		}
		seenNames[s.Binary] = true
		for _, port := range []int{s.GRPCPort, s.AdminPort} {
			if port == 0 {
				continue
			}
			if other, dup := seenPorts[port]; dup {
				t.Errorf("port %d used by %s and %s", port, other, s.Binary)
			}
			seenPorts[port] = s.Binary
			if port >= firstDynamicPort && port < firstDynamicPort+90 || port >= firstDynamicPort+100 && port < firstDynamicPort+190 {
				t.Errorf("%s port %d overlaps the dynamic range", s.Binary, port)
			}
		}
		if s.GRPCPort != 0 && s.AdminPort != s.GRPCPort+100 {
			t.Errorf("%s admin port %d should be its gRPC port + 100", s.Binary, s.AdminPort)
		}
		for _, d := range s.DependsOn {
			if indexOf(Table(), d) < 0 || indexOf(Table(), d) > indexOf(Table(), s.Binary) {
				t.Errorf("%s depends on %s, which must be listed before it", s.Binary, d)
			}
		}
	}
}
