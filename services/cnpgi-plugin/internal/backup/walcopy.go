package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// segmentRange lists the segment numbers (log*perLog+seg) from first to last, which may be
// on different timelines.
func segmentRange(first, last string, segSize int64) (from, to uint64, tliFrom, tliTo uint32, err error) {
	a, errA := wal.ParseFileName(first)
	b, errB := wal.ParseFileName(last)
	if errA != nil || errB != nil || a.Kind != wal.KindSegment || b.Kind != wal.KindSegment {
		return 0, 0, 0, 0, fmt.Errorf("bad WAL range %s..%s", first, last)
	}
	if !validSegmentSize(segSize) {
		segSize = 16 << 20
	}
	perLog := uint64(1<<32) / uint64(segSize)
	from, to = uint64(a.Log)*perLog+uint64(a.Seg), uint64(b.Log)*perLog+uint64(b.Seg)
	if to < from || b.Timeline < a.Timeline {
		return 0, 0, 0, 0, fmt.Errorf("bad WAL range %s..%s", first, last)
	}
	if to-from > 1<<20 || b.Timeline-a.Timeline > 64 {
		return 0, 0, 0, 0, fmt.Errorf("WAL range %s..%s is implausibly long", first, last)
	}
	return from, to, a.Timeline, b.Timeline, nil
}

func segmentName(tli uint32, segno uint64, segSize int64) string {
	if !validSegmentSize(segSize) {
		segSize = 16 << 20
	}
	perLog := uint64(1<<32) / uint64(segSize)
	return fmt.Sprintf("%08X%08X%08X", tli, segno/perLog, segno%perLog)
}

// copyBackupWAL copies the WAL files a backup needs from the WAL archive's store into the
// backup's store under the same keys, making the backup restorable from that store alone.
// A backup taken on a standby that followed a timeline switch (its primary failed over)
// begins on one timeline and ends on a later one: every segment from begin to end is copied
// on each timeline in between that has it (recovery picks by the history files), together
// with those timelines' history files.
func copyBackupWAL(ctx context.Context, from, to *stores.Named, server string, info *Info) (int, error) {
	first, last, tliFrom, tliTo, err := segmentRange(info.BeginWAL, info.EndWAL, info.SegmentSize)
	if err != nil {
		return 0, precondition(err, "cannot list the WAL the backup needs")
	}
	src := wal.Target{Store: from, Server: server}
	copied := 0
	copyName := func(name string) (bool, error) {
		key, err := wal.Find(ctx, src, name)
		if err != nil || key == "" {
			return false, err
		}
		if err := copyObject(ctx, from, to, key); err != nil {
			return false, fmt.Errorf("copy %s into the backup's store: %w", name, err)
		}
		copied++
		return true, nil
	}
	for segno := first; segno <= last; segno++ {
		found := false
		for tli := tliFrom; tli <= tliTo; tli++ {
			ok, err := copyName(segmentName(tli, segno, info.SegmentSize))
			if err != nil {
				return copied, err
			}
			found = found || ok
		}
		if !found {
			return copied, precondition(nil, "the WAL archive lacks %s, which the backup needs: is WAL archiving working?",
				segmentName(tliTo, segno, info.SegmentSize))
		}
	}
	for tli := max(tliFrom, 2); tli <= tliTo; tli++ {
		name := fmt.Sprintf("%08X.history", tli)
		ok, err := copyName(name)
		if err != nil {
			return copied, err
		}
		if !ok {
			return copied, precondition(nil, "the WAL archive lacks %s, which the backup needs", name)
		}
	}
	return copied, nil
}

// copyObject streams one WAL object between stores; an object already there is kept (WAL
// files are immutable, and the WAL service never overwrites them either). An object under
// the destination's own key (or plaintext into a store without one) passes as stored;
// anything else is decrypted with the source store's keys and re-encrypted with the
// destination's key (or stored plaintext where the destination has none), so every
// store holds only what its own keys read.
func copyObject(ctx context.Context, from, to *stores.Named, key string) error {
	r, info, err := from.Store.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(encryption.HeaderSize)
	hdr := encryption.ReadHeader(head)
	asStored := (!hdr.Encrypted && to.Encryption == nil) ||
		(hdr.Encrypted && to.Encryption != nil && hdr.KeyID == to.Encryption.ID())
	opts := objectstore.PutOptions{IfAbsent: true, Size: info.Size}
	if asStored {
		err = to.Store.Put(ctx, key, br, opts)
	} else {
		plain, uerr := from.Unseal(br, key)
		if uerr != nil {
			return uerr
		}
		opts.Size = -1
		_, err = objectstore.PutFunc(ctx, to.Store, key, opts, func(w io.Writer) error {
			sw, err := to.Seal(w)
			if err != nil {
				return err
			}
			if _, err := io.Copy(sw, plain); err != nil {
				return err
			}
			return sw.Close()
		})
	}
	if errors.Is(err, objectstore.ErrExists) {
		return nil
	}
	return err
}
