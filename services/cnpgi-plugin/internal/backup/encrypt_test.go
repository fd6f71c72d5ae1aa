package backup_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// TestTakeEncryptedBackup: with a key, every tar archive is stored encrypted and reads back
// through OpenArchive, while backup.info stays plaintext so that listings need no key.
func TestTakeEncryptedBackup(t *testing.T) {
	in := startInstance(t)
	ctx := ctxT(t)
	key, err := encryption.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	enc := &stores.Named{Name: in.archive.Name, Kind: "posix", Store: in.archive.Store, Encryption: key}
	res, err := in.svc.Take(ctx, backup.Request{Target: backup.Target{Store: enc, Server: "pg"}, WALStore: enc, ImmediateCheckpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	backups, err := backup.List(ctx, in.archive.Store, "pg")
	if err != nil || len(backups) != 1 || !backups[0].Usable() || backups[0].Info.EndWAL != res.Info.EndWAL {
		t.Fatalf("listing an encrypted store: %+v %v", backups, err)
	}
	for _, a := range backups[0].Archives {
		r, _, err := in.archive.Store.Get(ctx, a.Key)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(r)
		_ = r.Close()
		if !bytes.HasPrefix(raw, []byte("PLNTHENC")) {
			t.Fatalf("%s is stored in plaintext", a.Key)
		}
	}
	data := backups[0].Archives[slices.IndexFunc(backups[0].Archives, func(a backup.Archive) bool { return a.Base == "data" })]
	names, files := tarEntries(t, enc, data)
	if len(names) < 100 || string(files["backup_label"]) != res.Info.Label {
		t.Fatalf("decrypted archive: %d entries, backup_label %q", len(names), files["backup_label"])
	}
	if _, err := backup.OpenArchive(ctx, in.archive, data); !errors.Is(err, stores.ErrDecrypt) {
		t.Fatalf("opening without the key: %v, want ErrDecrypt", err)
	}
}
