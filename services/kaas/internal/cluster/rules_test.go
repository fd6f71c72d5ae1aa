package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

func testRules(t *testing.T) Rules {
	t.Helper()
	cat, err := NewCatalog([]string{"v1.33.13", "1.32.13", "v1.32.14", "v1.34.2"}, "v1.32.13")
	if err != nil {
		t.Fatal(err)
	}
	return Rules{Catalog: cat, InstanceTypes: []string{"standard", "gpu"}, MaxPoolSize: 10}
}

func TestCreateValidation(t *testing.T) {
	r := testRules(t)
	ok := CreateSpec{Name: "prod", ControlPlane: PoolSpec{Count: 3},
		Workers: []PoolSpec{{Name: "w", Count: 2, InstanceType: "gpu", Labels: []Label{{"team", "a"}}}}}
	cases := []struct {
		name  string
		edit  func(*CreateSpec)
		field string // "" means valid
	}{
		{"valid", func(*CreateSpec) {}, ""},
		{"empty name", func(s *CreateSpec) { s.Name = "" }, "name"},
		{"upper-case name", func(s *CreateSpec) { s.Name = "Prod" }, "name"},
		{"NUL in name", func(s *CreateSpec) { s.Name = "a\x00b" }, "name"},
		{"64-byte name", func(s *CreateSpec) { s.Name = strings.Repeat("a", 64) }, "name"},
		{"invalid UTF-8", func(s *CreateSpec) { s.Name = "\xff" }, "name"},
		{"unknown version", func(s *CreateSpec) { s.Version = "v1.20.0" }, "k8s_version"},
		{"garbage version", func(s *CreateSpec) { s.Version = "latest" }, "k8s_version"},
		{"two control-plane machines", func(s *CreateSpec) { s.ControlPlane.Count = 2 }, "control_plane_nodes.count"},
		{"no control plane", func(s *CreateSpec) { s.ControlPlane.Count = 0 }, "control_plane_nodes.count"},
		{"unknown instance type", func(s *CreateSpec) { s.ControlPlane.InstanceType = "huge" }, "control_plane_nodes.instanceType"},
		{"negative pool", func(s *CreateSpec) { s.Workers[0].Count = -1 }, "worker_node_pools[0].count"},
		{"pool over maximum", func(s *CreateSpec) { s.Workers[0].Count = 11 }, "worker_node_pools[0].count"},
		{"pool named control-plane", func(s *CreateSpec) { s.Workers[0].Name = ControlPlanePool }, "worker_node_pools[0].name"},
		{"pool without name", func(s *CreateSpec) { s.Workers[0].Name = "" }, "worker_node_pools[0].name"},
		{"duplicate pools", func(s *CreateSpec) { s.Workers = append(s.Workers, s.Workers[0]) }, "worker_node_pools[1].name"},
		{"bad label name", func(s *CreateSpec) { s.Workers[0].Labels[0].Name = "a b" }, "worker_node_pools[0].labels[0].name"},
		{"reserved label", func(s *CreateSpec) { s.Workers[0].Labels[0].Name = "node-role.kubernetes.io/x" }, "worker_node_pools[0].labels[0].name"},
		{"kaas label", func(s *CreateSpec) { s.Workers[0].Labels[0].Name = LabelPrefix + "pool" }, "worker_node_pools[0].labels[0].name"},
		{"bad label value", func(s *CreateSpec) { s.Workers[0].Labels[0].Value = "-x" }, "worker_node_pools[0].labels[0].value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			s.Workers = append([]PoolSpec(nil), ok.Workers...)
			s.Workers[0].Labels = append([]Label(nil), ok.Workers[0].Labels...)
			tc.edit(&s)
			pools, v, err := r.Create(s)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v.String() != "v1.32.13" || len(pools) != 2 || pools[0].Name != ControlPlanePool || pools[0].InstanceType != "standard" || pools[1].InstanceType != "gpu" {
					t.Fatalf("pools %+v version %s", pools, v)
				}
				return
			}
			var ie *input.Error
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("got %v, want an InvalidArgument naming %s", err, tc.field)
			}
			if len(err.Error()) > 300 {
				t.Fatalf("message quotes too much: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestCatalogUpgradesFollowTheSkewPolicy(t *testing.T) {
	r := testRules(t)
	got := func(from string) string {
		v, err := ParseVersion(from)
		if err != nil {
			t.Fatal(err)
		}
		return Catalog{versions: r.Catalog.UpgradesFrom(v)}.String()
	}
	for from, want := range map[string]string{
		"v1.32.13": "v1.32.14, v1.33.13", // newer patch and the next minor, never v1.34
		"v1.32.14": "v1.33.13",
		"v1.33.13": "v1.34.2",
		"v1.34.2":  "",
	} {
		if g := got(from); g != want {
			t.Errorf("from %s: %q, want %q", from, g, want)
		}
	}
	if r.Catalog.Default().String() != "v1.32.13" {
		t.Fatal("default")
	}
	if c, _ := NewCatalog([]string{"v1.32.13", "v1.33.13"}, ""); c.Default().String() != "v1.33.13" {
		t.Fatal("the default default is the newest")
	}
	for _, bad := range [][]string{nil, {"v1.2"}, {"v1.2.3", "1.2.3"}, {"v01.2.3"}} {
		if _, err := NewCatalog(bad, ""); err == nil {
			t.Errorf("catalog %q accepted", bad)
		}
	}
}

func TestMachineNamesAreDNSLabelsAndUnique(t *testing.T) {
	if n := MachineName("prod", "gpu", 3); n != "prod-gpu-3" {
		t.Fatal(n)
	}
	long := strings.Repeat("c", 63)
	a, b := MachineName(long, "pool-a", 12), MachineName(long, "pool-b", 12)
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasSuffix(a, "-12") {
		t.Fatalf("%q %q", a, b)
	}
}

func TestScaleDownReleasesFailedThenNewest(t *testing.T) {
	ms := []Machine{{Name: "a", Ordinal: 1, State: MachineReady}, {Name: "b", Ordinal: 2, State: MachineFailed},
		{Name: "c", Ordinal: 3, State: MachineReady}, {Name: "d", Ordinal: 4, State: MachineProvisioning}}
	var got []string
	for _, m := range ScaleDownOrder(ms) {
		got = append(got, m.Name)
	}
	if strings.Join(got, "") != "bdca" {
		t.Fatal(got)
	}
}
