package deviceclass

import (
	"errors"
	"strings"
	"testing"
)

// upstreamExample is TopoLVM's documented lvmd.yaml (docs/lvmd.md), with the thin class of
// its docs/snapshot-and-restore.md (v0.41.0) on the first class's group and a key lvmd does
// not know.
const upstreamExample = `socket-name: /run/topolvm/lvmd.sock
device-classes:
  - name: ssd
    volume-group: myvg1
    default: true
    spare-gb: 10
  - name: hdd
    volume-group: myvg2
    spare-gb: 10
  - name: striped
    volume-group: multi-pv-vg
    spare-gb: 10
    stripe: 2
    stripe-size: "64"
  - name: raid
    volume-group: raid-vg
    lvcreate-options:
      - --type=raid1
    thin-pool:
      name: pool0
  - name: thin
    volume-group: myvg1
    type: thin
    thin-pool:
      name: pool0
      overprovision-ratio: 5.0
future-key: 1
`

func TestParseUpstreamExample(t *testing.T) {
	f, warnings, err := Parse([]byte(upstreamExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "future-key") {
		t.Errorf("warnings %q: the unknown key must be named", warnings)
	}
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	if f.SocketName != "/run/topolvm/lvmd.sock" || len(c.All()) != 5 {
		t.Fatalf("%+v", f)
	}
	def, _ := c.Get("")
	if def.Name != "ssd" || c.Default() != def {
		t.Errorf("default %+v", def)
	}
	striped, err := c.Get("striped")
	if err != nil || *striped.Stripe != 2 || striped.StripeSize != "64" || striped.Spare() != 10<<30 {
		t.Errorf("striped %+v %v", striped, err)
	}
	raid, _ := c.Get("raid")
	if raid.Spare() != DefaultSpareGB<<30 || raid.LVCreateOptions[0] != "--type=raid1" || raid.IsThin() || raid.Pool() != "" {
		t.Errorf("raid %+v: a thick class's thin-pool is ignored, as lvmd ignores it", raid)
	}
	thin, _ := c.Get("thin")
	if !thin.IsThin() || thin.Pool() != "pool0" || thin.ThinPool.OverprovisionRatio != 5 || thin.VolumeGroup != "myvg1" {
		t.Errorf("thin %+v", thin)
	}
	if _, err := c.Get("nvme"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown class: %v", err)
	}
	zero := uint64(0)
	if (&DeviceClass{SpareGB: &zero}).Spare() != 0 {
		t.Error("spare-gb: 0 must mean no spare")
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want []string
	}{
		{`device-classes: []`, []string{"device-classes: at least one"}},
		{`socket-name: /x`, []string{"device-classes: at least one"}},
		{"device-classes:\n- {name: a, volume-group: v1}\n", []string{"exactly one class must have default: true; 0 do"}},
		{"device-classes:\n- {name: a, volume-group: v1, default: true}\n- {name: b, volume-group: v2, default: true}\n", []string{"; 2 do"}},
		{"device-classes:\n- {name: a, volume-group: v1, default: true}\n- {name: a, volume-group: v2}\n", []string{`device-classes[1].name: "a" is also the name of device-classes[0]`}},
		{"device-classes:\n- {name: a, volume-group: v1, default: true}\n- {name: b, volume-group: v1}\n", []string{`device-classes[1].volume-group: "v1" is also`}},
		{"device-classes:\n- {name: 'bad name', volume-group: v1, default: true}\n", []string{"device-classes[0].name:", "not a qualified name"}},
		{"device-classes:\n- {name: " + strings.Repeat("a", 64) + ", volume-group: v1, default: true}\n", []string{"device-classes[0].name:", "longer than 63"}},
		{"device-classes:\n- {name: Example.com/ssd, volume-group: v1, default: true}\n", []string{"prefix that is not a DNS subdomain"}},
		{"device-classes:\n- {name: a, default: true}\n", []string{"device-classes[0].volume-group: is required"}},
		{"device-classes:\n- {name: a, volume-group: '-v', default: true}\n", []string{"device-classes[0].volume-group:", "not a volume group name"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, stripe: 0}\n", []string{"device-classes[0].stripe:"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, stripe-size: 64x}\n", []string{"device-classes[0].stripe-size:"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, lvcreate-options: ['']}\n", []string{"device-classes[0].lvcreate-options[0]:"}},
		{"device-classes:\n- null\n- {name: a, volume-group: v, default: true}\n", []string{"device-classes[0]: is empty"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thinn}\n", []string{`device-classes[0].type: "thinn" is neither thick nor thin`}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin}\n", []string{"device-classes[0].thin-pool: is required for a thin class"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {overprovision-ratio: 2}}\n", []string{"device-classes[0].thin-pool.name: is required"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {name: '-p', overprovision-ratio: 2}}\n", []string{"device-classes[0].thin-pool.name:", "not a logical volume name"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {name: p}}\n", []string{"device-classes[0].thin-pool.overprovision-ratio: 0 must be at least 1.0"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {name: p, overprovision-ratio: .nan}}\n", []string{"device-classes[0].thin-pool.overprovision-ratio: NaN"}},
		{"device-classes:\n- {name: a, volume-group: v, default: true, type: thin, thin-pool: {name: p, overprovision-ratio: 2}}\n- {name: b, volume-group: v, type: thin, thin-pool: {name: p, overprovision-ratio: 3}}\n", []string{`device-classes[1].thin-pool.name: "v/p" is also the thin pool of device-classes[0]`}},
		{"device-classes:\n- {name: a, volume-group: v, default: true}\n- {name: b, volume-group: v, type: thick}\n", []string{`device-classes[1].volume-group: "v" is also the volume group of device-classes[0] (one thick class per volume group)`}},
	} {
		f, _, err := Parse([]byte(tt.yaml))
		if err == nil {
			err = f.Validate()
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %v, want it to contain %q", tt.yaml, err, w)
			}
		}
	}
	for _, ok := range []string{"ssd", "example.com/ssd", "a", "A-b_c.d", "topolvm.io/nvme-1"} {
		if err := QualifiedName(ok); err != nil {
			t.Errorf("QualifiedName(%q): %v", ok, err)
		}
	}
	if _, _, err := Parse([]byte("device-classes: {")); err == nil {
		t.Error("broken YAML accepted")
	}
	if _, _, err := Parse([]byte("device-classes:\n- {spare-gb: -1}\n")); err == nil {
		t.Error("a negative spare-gb must not parse")
	}
}

// FuzzParse feeds arbitrary bytes to the configuration parser and validation: no input may
// panic, and a file that validates must index into classes with one default.
func FuzzParse(f *testing.F) {
	f.Add([]byte(upstreamExample))
	f.Add([]byte(optionClassExample))
	f.Add([]byte("device-classes:\n- {name: a, volume-group: v1, default: true, spare-gb: 0}\n"))
	f.Add([]byte("device-classes: [{name: 'x/y', volume-group: '+', default: yes}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, _, err := Parse(data)
		if err != nil || file.Validate() != nil {
			return
		}
		c, err := New(file)
		if err != nil {
			t.Fatalf("validated file refused by New: %v", err)
		}
		if d, err := c.Get(""); err != nil || d == nil || !d.Default {
			t.Fatalf("no default class in a valid file")
		}
	})
}

// TestThinClassesShareAGroup: a group has one thick class and any number of thin classes, one
// per pool (lvmd's keys: the group, or group/pool).
func TestThinClassesShareAGroup(t *testing.T) {
	f, _, err := Parse([]byte(`device-classes:
  - {name: thick, volume-group: vg, default: true}
  - {name: fast, volume-group: vg, type: thin, thin-pool: {name: pool0, overprovision-ratio: 1}}
  - {name: cheap, volume-group: vg, type: thin, thin-pool: {name: pool1, overprovision-ratio: 10}}
  - {name: other, volume-group: vg2, type: thin, thin-pool: {name: pool0, overprovision-ratio: 2.5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, pool := range map[string]string{"thick": "", "fast": "pool0", "cheap": "pool1", "other": "pool0"} {
		if dc, err := c.Get(name); err != nil || dc.Pool() != pool {
			t.Errorf("%s: pool %q, %v; want %q", name, dc.Pool(), err, pool)
		}
	}
}
