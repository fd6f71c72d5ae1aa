package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// walSuffixes are the compressions a WAL object's key may end with (barman-cloud's and ours).
var walSuffixes = []string{"", ".gz", ".zst", ".bz2"}

// walKeyPrefix is barman-cloud's key of a WAL file without its compression suffix: segments
// under wals/<timeline+log>/, history files directly in wals/.
func walKeyPrefix(server, name string) string {
	if strings.HasSuffix(name, ".history") {
		return path.Join(server, "wals", name)
	}
	return path.Join(server, "wals", name[:16], name)
}

// FindWAL returns the key of the archived WAL file name, or "" when it is not archived.
func FindWAL(ctx context.Context, st objectstore.Store, server, name string) (string, error) {
	base := walKeyPrefix(server, name)
	for info, err := range st.List(ctx, base) {
		if err != nil {
			return "", err
		}
		for _, suffix := range walSuffixes {
			if info.Key == base+suffix {
				return info.Key, nil
			}
		}
	}
	return "", nil
}

// segmentsBetween lists the segment names from first to last on first's timeline.
func segmentsBetween(first, last string, segSize int64) ([]string, error) {
	tli, from, ok1 := segmentPosition(first)
	_, to, ok2 := segmentPosition(last)
	if !ok1 || !ok2 || to < from {
		return nil, fmt.Errorf("bad WAL range %s..%s", first, last)
	}
	if !validSegmentSize(segSize) {
		segSize = 16 << 20
	}
	perLog := uint64(1<<32) / uint64(segSize)
	var names []string
	for log, seg := from>>32, from&0xFFFFFFFF; log<<32|seg <= to; {
		names = append(names, fmt.Sprintf("%08X%08X%08X", tli, log, seg))
		if seg++; seg == perLog {
			log, seg = log+1, 0
		}
		if len(names) > 1<<20 {
			return nil, fmt.Errorf("WAL range %s..%s is implausibly long", first, last)
		}
	}
	return names, nil
}

// copyBackupWAL copies the WAL files a backup needs (its segments and, after a promotion,
// its timeline's history file) from the WAL archive's store into the backup's store under
// the same keys, making the backup restorable from that store alone.
func copyBackupWAL(ctx context.Context, from, to objectstore.Store, server string, info *Info) (int, error) {
	names, err := segmentsBetween(info.BeginWAL, info.EndWAL, info.SegmentSize)
	if err != nil {
		return 0, precondition(err, "cannot list the WAL the backup needs")
	}
	if info.Timeline > 1 {
		names = append(names, fmt.Sprintf("%08X.history", info.Timeline))
	}
	copied := 0
	for _, name := range names {
		key, err := FindWAL(ctx, from, server, name)
		if err != nil {
			return copied, err
		}
		if key == "" {
			return copied, precondition(nil, "the WAL archive lacks %s, which the backup needs: is WAL archiving working?", name)
		}
		if err := copyObject(ctx, from, to, key); err != nil {
			return copied, fmt.Errorf("copy %s into the backup's store: %w", name, err)
		}
		copied++
	}
	return copied, nil
}

// copyObject streams one object between stores; an object already there is kept (WAL files
// are immutable, and the WAL service never overwrites them either).
func copyObject(ctx context.Context, from, to objectstore.Store, key string) error {
	r, info, err := from.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	err = to.Put(ctx, key, r, objectstore.PutOptions{IfAbsent: true, Size: info.Size})
	if errors.Is(err, objectstore.ErrExists) {
		return nil
	}
	return err
}
