package backup

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

func posixNamed(t *testing.T, name string, key *encryption.Key) *stores.Named {
	t.Helper()
	st, err := objectstore.NewPOSIX(filepath.Join(t.TempDir(), name), true)
	if err != nil {
		t.Fatal(err)
	}
	return &stores.Named{Name: name, Kind: "posix", Store: st, Encryption: key}
}

func key(t *testing.T, fill byte) *encryption.Key {
	t.Helper()
	k, err := encryption.NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// putSealed stores data as the WAL service would in st (encrypted with st's key, if any).
func putSealed(t *testing.T, st *stores.Named, k string, data []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := st.Seal(&buf)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = w.Close()
	if err := st.Store.Put(context.Background(), k, bytes.NewReader(buf.Bytes()), objectstore.PutOptions{Size: int64(buf.Len())}); err != nil {
		t.Fatal(err)
	}
}

func plaintext(t *testing.T, st *stores.Named, k string) []byte {
	t.Helper()
	r, _, err := st.Store.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := st.Unseal(r, k)
	if err != nil {
		t.Fatalf("%s in %s: %v", k, st.Name, err)
	}
	b, _ := io.ReadAll(p)
	return b
}

// TestCopyBackupWALAcrossTimelines: a backup that began on timeline 1 and ended on 2 (a
// standby that followed its primary's failover) gets the segments of both timelines and
// timeline 2's history file copied.
func TestCopyBackupWALAcrossTimelines(t *testing.T) {
	from, to := posixNamed(t, "wal", nil), posixNamed(t, "offsite", nil)
	have := []string{
		"pg/wals/0000000100000000/000000010000000000000003.gz", "pg/wals/0000000100000000/000000010000000000000004.gz",
		"pg/wals/0000000100000000/000000010000000000000005.partial.gz",
		"pg/wals/0000000200000000/000000020000000000000005.gz", "pg/wals/0000000200000000/000000020000000000000006.gz",
		"pg/wals/00000002.history", "pg/wals/0000000100000000/000000010000000000000009.gz",
	}
	for _, k := range have {
		putSealed(t, from, k, []byte(k))
	}
	info := &Info{BeginWAL: "000000010000000000000003", EndWAL: "000000020000000000000006", SegmentSize: 16 << 20, Timeline: 1}
	n, err := copyBackupWAL(context.Background(), from, to, "pg", info)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for o, err := range to.Store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Key)
	}
	want := []string{"pg/wals/0000000100000000/000000010000000000000003.gz", "pg/wals/0000000100000000/000000010000000000000004.gz",
		"pg/wals/0000000200000000/000000020000000000000005.gz", "pg/wals/0000000200000000/000000020000000000000006.gz", "pg/wals/00000002.history"}
	slices.Sort(want)
	if n != 5 || !slices.Equal(got, want) {
		t.Fatalf("copied %d: %v, want %v", n, got, want)
	}
	// A segment missing on every timeline fails the copy.
	info.EndWAL = "000000020000000000000008"
	if _, err := copyBackupWAL(context.Background(), from, to, "pg", info); err == nil {
		t.Fatal("a gap in the WAL went unnoticed")
	}
}

// TestCopyReencrypts: objects pass as stored when the destination's key wrote them (or both
// are plaintext); otherwise they are decrypted with the source's keys and encrypted with the
// destination's, so each store holds only what its own keys read.
func TestCopyReencrypts(t *testing.T) {
	a, b := key(t, 1), key(t, 2)
	cases := []struct {
		name     string
		from, to *stores.Named
		same     bool // stored bytes unchanged
	}{
		{"same key", posixNamed(t, "f1", a), posixNamed(t, "t1", a), true},
		{"other key", posixNamed(t, "f2", a), posixNamed(t, "t2", b), false},
		{"plaintext into an encrypted store", posixNamed(t, "f3", nil), posixNamed(t, "t3", b), false},
		{"encrypted into a plaintext store", posixNamed(t, "f4", a), posixNamed(t, "t4", nil), false},
		{"plaintext", posixNamed(t, "f5", nil), posixNamed(t, "t5", nil), true},
	}
	const k = "pg/wals/0000000100000000/000000010000000000000003.gz"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			putSealed(t, c.from, k, []byte("segment bytes"))
			if err := copyObject(context.Background(), c.from, c.to, k); err != nil {
				t.Fatal(err)
			}
			if got := plaintext(t, c.to, k); string(got) != "segment bytes" {
				t.Fatalf("the destination reads %q", got)
			}
			raw := func(st *stores.Named) []byte {
				r, _, _ := st.Store.Get(context.Background(), k)
				defer r.Close()
				b, _ := io.ReadAll(r)
				return b
			}
			if bytes.Equal(raw(c.from), raw(c.to)) != c.same {
				t.Fatalf("stored bytes equal: %v, want %v", !c.same, c.same)
			}
			hdr := encryption.ReadHeader(raw(c.to))
			if c.to.Encryption != nil && (!hdr.Encrypted || hdr.KeyID != c.to.Encryption.ID()) || c.to.Encryption == nil && hdr.Encrypted {
				t.Fatalf("the copy's header %+v does not match the destination's key", hdr)
			}
		})
	}
}
