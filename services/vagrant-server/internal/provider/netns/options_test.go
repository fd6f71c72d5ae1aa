package netns

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNewValidatesOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" = valid
	}{
		{"defaults", Options{}, ""},
		{"long bridge", Options{Bridge: "a-bridge-name-too-long"}, "bridge"},
		{"ipv6 subnet", Options{Subnet: netip.MustParsePrefix("fd00::/64")}, "IPv4"},
		{"tiny subnet", Options{Subnet: netip.MustParsePrefix("10.213.0.0/30")}, "/29"},
		{"host bits", Options{Subnet: netip.MustParsePrefix("10.213.0.5/24")}, "10.213.0.0/24"},
		{"long link prefix", Options{LinkPrefix: "plinthveth"}, "link prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if tc.want == "" && err != nil {
				t.Fatalf("New: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestValidID(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, ok := range map[string]bool{"abc123": true, "0123456789abc": true, "0123456789abcd": false, "": false, "Abc": false, "a-b": false} {
		if got := p.ValidID(id) == nil; got != ok {
			t.Errorf("ValidID(%q) ok=%v, want %v", id, got, ok)
		}
	}
}

func TestLastAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.213.0.0/24": "10.213.0.255", "10.213.0.0/16": "10.213.255.255", "10.213.0.8/29": "10.213.0.15",
	} {
		if got := lastAddr(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("lastAddr(%s) = %s, want %s", in, got, want)
		}
	}
}
