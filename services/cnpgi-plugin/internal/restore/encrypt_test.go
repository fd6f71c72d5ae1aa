package restore_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/restore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// sealed encrypts data as the store writes it.
func sealed(t *testing.T, st *stores.Named, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := st.Seal(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRestoreEncryptedBackup(t *testing.T) {
	key, err := encryption.NewKey(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.store.Encryption = key
	e.addBackup(t, "20260101T010000", time.Date(2026, 1, 1, 1, 5, 0, 0, time.UTC), true)

	// Without the key: a clear error naming the store, nothing unpacked as garbage.
	plain := &stores.Named{Name: e.store.Name, Kind: e.store.Kind, Store: e.store.Store}
	_, err = e.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: plain, Server: "pg"}})
	if !errors.Is(err, stores.ErrDecrypt) || !strings.Contains(err.Error(), `store "main"`) {
		t.Fatalf("restore without the key: %v", err)
	}

	e2 := newEnv(t)
	e2.store = e.store
	res, err := e2.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: e.store, Server: "pg"}})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(e2.pgdata, "base", "1", "1259")) != "20260101T010000" || read(t, filepath.Join(e2.pgdata, "backup_label")) != res.Backup.Label {
		t.Fatal("the encrypted backup was not unpacked")
	}
}
