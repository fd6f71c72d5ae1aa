package deviceclass

import (
	"strings"
	"testing"
)

// optionClassExample is lvmd.yaml with TopoLVM's lvcreate-option-classes (docs/lvmd.md's
// format).
const optionClassExample = `device-classes:
  - name: ssd
    volume-group: myvg1
    default: true
lvcreate-option-classes:
  - name: raid1
    options:
      - --type=raid1
      - --mirrors=1
  - name: striped
    options: ["--type", "striped", "-i2", "-I", "64k", "--nosync", "--alloc=cling"]
`

func TestOptionClasses(t *testing.T) {
	f, warnings, err := Parse([]byte(optionClassExample))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("%v %q: lvcreate-option-classes is a key the agent knows", err, warnings)
	}
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	raid, ok := c.OptionClass("raid1")
	if !ok || strings.Join(raid.Options, " ") != "--type=raid1 --mirrors=1" {
		t.Errorf("raid1: %+v %v", raid, ok)
	}
	if _, ok := c.OptionClass("striped"); !ok {
		t.Error("striped missing")
	}
	if _, ok := c.OptionClass("nvme"); ok {
		t.Error("an unknown option class was found")
	}
}

func TestOptionClassesRefuseHarm(t *testing.T) {
	const head = "device-classes:\n- {name: a, volume-group: v, default: true}\nlvcreate-option-classes:\n"
	for _, tt := range []struct {
		classes string
		want    []string
	}{
		{"- {name: x, options: ['--config=devices { filter = [\"a|.*|\"] }']}", []string{"lvcreate-option-classes[0].options[0]:", "not an lvcreate option", "allowed: --type"}},
		{"- {name: x, options: ['--zero', 'n']}", []string{"options[0]:", `"--zero"`}},
		{"- {name: x, options: ['--wipesignatures=n']}", []string{"options[0]:"}},
		{"- {name: x, options: ['--type=thin-pool']}", []string{"options[0]: --type:", "not a segment type"}},
		{"- {name: x, options: ['--type=snapshot']}", []string{"not a segment type"}},
		{"- {name: x, options: ['-s']}", []string{"options[0]:"}},
		{"- {name: x, options: ['--thinpool', 'pool']}", []string{"options[0]:"}},
		{"- {name: x, options: ['-n', 'other']}", []string{"options[0]:"}},
		{"- {name: x, options: ['-L1g']}", []string{"options[0]:"}},
		{"- {name: x, options: ['--addtag=x']}", []string{"options[0]:"}},
		{"- {name: x, options: ['/dev/sdb']}", []string{"options[0]:", `"/dev/sdb"`}},
		{"- {name: x, options: ['othervg']}", []string{"options[0]:"}},
		{"- {name: x, options: ['--profile', 'p']}", []string{"options[0]:"}},
		{"- {name: x, options: ['--stripes']}", []string{"options[0]: --stripes needs a value"}},
		{"- {name: x, options: ['--stripes=two']}", []string{"options[0]: --stripes:"}},
		{"- {name: x, options: ['--nosync=1']}", []string{"--nosync takes no value"}},
		{"- {name: x, options: ['']}", []string{"options[0]: must be a non-empty argument"}},
		{"- {name: '', options: []}", []string{"lvcreate-option-classes[0].name: is required"}},
		{"- {name: 'a b', options: []}", []string{"lvcreate-option-classes[0].name:", "not an option class name"}},
		{"- {name: x}\n- {name: x}", []string{`lvcreate-option-classes[1].name: "x" is also the name of lvcreate-option-classes[0]`}},
		{"- null", []string{"lvcreate-option-classes[0]: is empty"}},
	} {
		f, _, err := Parse([]byte(head + tt.classes + "\n"))
		if err == nil {
			err = f.Validate()
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to contain %q", tt.classes, err, w)
			}
		}
	}
	// A device class's own lvcreate-options follow the same rule.
	f, _, _ := Parse([]byte("device-classes:\n- {name: a, volume-group: v, default: true, lvcreate-options: ['--config', 'x']}\n"))
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "device-classes[0].lvcreate-options[0]:") {
		t.Errorf("device class options: %v", err)
	}
}
