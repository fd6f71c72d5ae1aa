package deviceclass

import (
	"errors"
	"strings"
	"testing"
)

// upstreamExample is TopoLVM's documented lvmd.yaml (docs/lvmd.md), with a newer key.
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
`

func TestParseUpstreamExample(t *testing.T) {
	f, warnings, err := Parse([]byte(upstreamExample))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "thin-pool") {
		t.Errorf("warnings %q: the unknown key must be named", warnings)
	}
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	if f.SocketName != "/run/topolvm/lvmd.sock" || len(c.All()) != 4 {
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
	if raid.Spare() != DefaultSpareGB<<30 || raid.LVCreateOptions[0] != "--type=raid1" {
		t.Errorf("raid %+v", raid)
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
