package input

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestPagingSize(t *testing.T) {
	p := Paging{Default: 50, Max: 500}
	for _, c := range []struct {
		in   int32
		want int
	}{{0, 50}, {1, 1}, {500, 500}, {501, 500}, {1 << 30, 500}} {
		if got, err := p.Size(c.in); err != nil || got != c.want {
			t.Errorf("Size(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	_, err := p.Size(-1)
	if s, _ := status.FromError(err); s.Code() != codes.InvalidArgument || !strings.HasPrefix(s.Message(), "page_size:") {
		t.Fatalf("Size(-1): %v; want InvalidArgument naming page_size", err)
	}
}

func TestPagingTokens(t *testing.T) {
	p := Paging{Default: 2, Max: 10, MaxKey: 8, Call: "ListThings"}
	rows := []string{"a", "b", "c"}
	page, next := Page(rows, 2, func(s string) string { return s })
	if len(page) != 2 || next == "" {
		t.Fatalf("Page of 3 rows, size 2: %v %q", page, next)
	}
	if key, err := p.Key(next, nil); err != nil || key != "b" {
		t.Fatalf("Key(next) = %q, %v; want the page's last key", key, err)
	}
	if page, next := Page(rows[:2], 2, func(s string) string { return s }); len(page) != 2 || next != "" {
		t.Fatalf("last page: %v %q; want no next token", page, next)
	}
	if key, err := p.Key("", nil); err != nil || key != "" {
		t.Fatalf("first page: %q, %v", key, err)
	}
	only := func(k string) bool { return k != "zz" }
	for _, bad := range []string{"%%", base64.RawURLEncoding.EncodeToString([]byte("123456789")),
		base64.RawURLEncoding.EncodeToString([]byte("zz")), strings.Repeat("A", 1<<20)} {
		_, err := p.Key(bad, only)
		s, _ := status.FromError(err)
		if s.Code() != codes.InvalidArgument || !strings.Contains(s.Message(), "page_token") ||
			!strings.Contains(s.Message(), "ListThings") || len(s.Message()) > 200 {
			t.Errorf("Key(%.10q…): %v; want a short InvalidArgument naming page_token", bad, err)
		}
	}
}
