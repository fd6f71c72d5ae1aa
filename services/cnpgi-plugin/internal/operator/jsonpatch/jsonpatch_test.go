package jsonpatch

import "testing"

func TestPointerEscapesTokens(t *testing.T) {
	cases := map[string][]string{
		"/metadata/annotations/cnpg.io~1skip": {"metadata", "annotations", "cnpg.io/skip"},
		"/a~0b/0/-":                           {"a~b", "0", "-"},
		"":                                    nil,
	}
	for want, tokens := range cases {
		if got := Pointer(tokens...); got != want {
			t.Errorf("Pointer(%q) = %q, want %q", tokens, got, want)
		}
	}
}

func TestEmptyPatchIsNoChange(t *testing.T) {
	var p Patch
	if b, err := p.Marshal(); err != nil || b != nil {
		t.Fatalf("empty patch = %q, %v; want nil (CloudNativePG's no-op)", b, err)
	}
	p.Add("/spec/x", map[string]string{"a": "b"})
	p.Replace("/spec/y", 1)
	b, err := p.Marshal()
	if err != nil || string(b) != `[{"op":"add","path":"/spec/x","value":{"a":"b"}},{"op":"replace","path":"/spec/y","value":1}]` {
		t.Fatalf("patch = %s, %v", b, err)
	}
}
