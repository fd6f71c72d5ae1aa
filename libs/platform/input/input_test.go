package input

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestString(t *testing.T) {
	tests := []struct {
		v    string
		max  int
		want string // "" means valid
	}{
		{"alice", 10, ""},
		{"", 10, ""},
		{"héllo", 6, ""},
		{"héllo", 5, "is 6 bytes; at most 5 are allowed"},
		{"a\x00b", 10, "must not contain NUL"},
		{"\xff\xfe", 10, "not valid UTF-8"},
		{strings.Repeat("x", 1<<20), 0, ""},
	}
	for _, tt := range tests {
		err := String("basis.name", tt.v, tt.max)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("String(%s, %d) = %v, want %q", Quote(tt.v), tt.max, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "basis.name: ") {
			t.Errorf("error %q does not name the field", err)
		}
	}
	if err := Required("name", "", 5); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("Required empty = %v", err)
	}
	if err := Strings("tags", []string{"a", "b\x00"}, 10, 5); err == nil || !strings.HasPrefix(err.Error(), "tags[1]:") {
		t.Errorf("Strings = %v", err)
	}
}

func TestErrorIsInvalidArgument(t *testing.T) {
	err := error(Invalid("target.name", "must be a DNS label"))
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument || st.Message() != "target.name: must be a DNS label" {
		t.Errorf("status = %v %v", st, ok)
	}
}

func TestQuoteBoundsAndShowsLength(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	q := Quote(huge)
	if len(q) > QuoteLen+40 {
		t.Errorf("Quote is %d bytes", len(q))
	}
	if !strings.Contains(q, "(1048576 bytes)") {
		t.Errorf("Quote %s does not say the length", q)
	}
	if Quote("a\x00b") != `"a\x00b"` {
		t.Errorf("control characters not visible: %s", Quote("a\x00b"))
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("ü", 1000)
	got := Truncate(s, 100)
	if len(got) > 100 || !strings.HasSuffix(got, "…[truncated 2000 bytes]") {
		t.Errorf("Truncate = %q (%d bytes)", got, len(got))
	}
	if Truncate("short", 100) != "short" {
		t.Error("short string changed")
	}
}

func FuzzQuoteAndTruncate(f *testing.F) {
	for _, s := range []string{"", "a", "é", "\xff", strings.Repeat("x", 200)} {
		f.Add(s, 70)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if q := Quote(s); len(q) > 4*QuoteLen+40 {
			t.Errorf("Quote is %d bytes", len(q))
		}
		if max < 64 || max > 1<<20 {
			return
		}
		if got := Truncate(s, max); len(got) > max {
			t.Errorf("Truncate(%d) is %d bytes", max, len(got))
		}
	})
}
