package config

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "4K": 4 << 10, "512M": 512 << 20, "32G": 32 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1G", "1T", "G", "1.5G", "99999999999999G"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}
