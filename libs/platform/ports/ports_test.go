package ports

import (
	"net"
	"strconv"
	"testing"
)

func TestFree(t *testing.T) {
	got, err := Free(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range got {
		if p < Min || p > Max || seen[p] {
			t.Errorf("port %d out of range or repeated in %v", p, got)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(got[0]))
	if err != nil {
		t.Fatalf("a free port could not be bound: %v", err)
	}
	defer l.Close()
	if IsFree(got[0]) {
		t.Error("a bound port reported free")
	}
}
