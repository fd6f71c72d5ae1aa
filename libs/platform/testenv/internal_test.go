package testenv

import (
	"errors"
	"testing"
)

func TestDBWithoutMainIsExplained(t *testing.T) {
	var s postgresServer
	if _, _, err := s.get(); !errors.Is(err, errNoMain) {
		t.Fatalf("err = %v, want errNoMain", err)
	}
}

func TestSanitize(t *testing.T) {
	cases := map[string]string{
		"TestFoo/Sub_Case#01": "testfoo_sub_case_01",
		"__A--B__":            "a_b",
		"abcdefghij_klm":      "abcdefghij",
	}
	for in, want := range cases {
		max := 40
		if in == "abcdefghij_klm" {
			max = 11
		}
		if got := sanitize(in, max); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
