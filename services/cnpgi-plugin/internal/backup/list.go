package backup

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Stored is one backup found in a store.
type Stored struct {
	// ID is the backup's directory name.
	ID string
	// Info is its backup.info; nil when the file is missing (a backup still running, or a
	// deletion that was interrupted) or unreadable (Problem says why).
	Info    *Info
	Problem string
	// Archives are its tar objects; Keys every object under its directory.
	Archives []Archive
	Keys     []string
}

// Usable reports whether the backup completed and can be restored.
func (b Stored) Usable() bool { return b.Info != nil && b.Info.Status == StatusDone }

// maxInfoSize bounds a backup.info read: they are a few KiB.
const maxInfoSize = 1 << 20

// List reads every backup of server in the store (ours and barman-cloud's), ordered by id,
// which is the start time.
func List(ctx context.Context, st objectstore.Store, server string) ([]Stored, error) {
	byID := map[string]*Stored{}
	for obj, err := range st.List(ctx, BaseDir(server)) {
		if err != nil {
			return nil, err
		}
		id := idOfKey(server, obj.Key)
		if id == "" {
			continue
		}
		b := byID[id]
		if b == nil {
			b = &Stored{ID: id}
			byID[id] = b
		}
		b.Keys = append(b.Keys, obj.Key)
		if a, ok := parseArchive(Dir(server, id), obj.Key, obj.Size); ok {
			b.Archives = append(b.Archives, a)
		}
	}
	out := make([]Stored, 0, len(byID))
	for _, b := range byID {
		if slices.Contains(b.Keys, InfoKey(server, b.ID)) {
			info, err := readInfo(ctx, st, server, b.ID)
			if err != nil {
				b.Problem = err.Error()
			}
			b.Info = info
		}
		slices.SortFunc(b.Archives, func(x, y Archive) int {
			return cmp.Or(cmp.Compare(x.Base, y.Base), cmp.Compare(x.Part, y.Part))
		})
		out = append(out, *b)
	}
	slices.SortFunc(out, func(x, y Stored) int { return strings.Compare(x.ID, y.ID) })
	return out, nil
}

// readInfo fetches and decodes one backup.info.
func readInfo(ctx context.Context, st objectstore.Store, server, id string) (*Info, error) {
	r, _, err := st.Get(ctx, InfoKey(server, id))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxInfoSize))
	if err != nil {
		return nil, err
	}
	info, err := DecodeInfo(id, data)
	if err != nil {
		return nil, err
	}
	if info.Status == "" {
		return nil, fmt.Errorf("backup.info of %s has no status", id)
	}
	return info, nil
}

// Missing names the archives a usable backup lacks (PGDATA and each absolute tablespace),
// which makes it unrestorable.
func (b Stored) Missing() []string {
	if b.Info == nil {
		return nil
	}
	want := []string{"data"}
	for _, ts := range b.Info.Tablespaces {
		if strings.HasPrefix(ts.Location, "/") {
			want = append(want, fmt.Sprint(ts.OID))
		}
	}
	var missing []string
	for _, w := range want {
		if !slices.ContainsFunc(b.Archives, func(a Archive) bool { return a.Base == w && a.Part == 0 }) {
			missing = append(missing, w)
		}
	}
	return missing
}
