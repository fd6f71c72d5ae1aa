package azureblob_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
)

// barmanCloud finds barman-cloud-wal-archive and -restore with the Python modules their
// Azure support needs (Debian: barman-cli-cloud, python3-azure).
func barmanCloud(t *testing.T) (archive, restore string) {
	t.Helper()
	archive, err := exec.LookPath("barman-cloud-wal-archive")
	if err != nil {
		testenv.SkipOrFail(t, "barman-cloud-wal-archive not found (Debian: apt-get install barman-cli-cloud python3-azure)")
	}
	restore, err = exec.LookPath("barman-cloud-wal-restore")
	if err != nil {
		testenv.SkipOrFail(t, "barman-cloud-wal-restore not found (Debian: apt-get install barman-cli-cloud python3-azure)")
	}
	// The interpreter the scripts run, not whichever python3 comes first on PATH.
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	interp := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(interp) == 0 {
		t.Fatalf("%s has no #! line", archive)
	}
	check := exec.Command(interp[0], append(interp[1:], "-c", "import azure.storage.blob, barman.cloud_providers.azure_blob_storage")...)
	if out, err := check.CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "barman-cloud's Python lacks the Azure SDK (Debian: apt-get install python3-azure): "+strings.TrimSpace(string(out)))
	}
	return archive, restore
}

// walSegment is 16 MiB like PostgreSQL's default segment: pages of random bytes among
// zeros, so that it compresses as real WAL does, but not to nothing.
func walSegment(t *testing.T) []byte {
	seg := make([]byte, 16<<20)
	for off := 0; off < len(seg); off += 8192 {
		_, _ = rand.Read(seg[off : off+2048])
	}
	return seg
}

// runBarman runs one barman-cloud command against Azurite through a connection string, the
// way barman-cloud reaches an emulator (its URL form http://HOST:PORT/ACCOUNT/CONTAINER/PATH).
func runBarman(t *testing.T, srv *azuritetest.Server, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cloud-provider", "azure-blob-storage"}, args...)...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+srv.ConnectionString())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
}

// TestBarmanCloudInterop checks the layout barman-cloud uses in Azure Blob Storage in both
// directions: what barman-cloud-wal-archive stores, the Store lists and reads under the
// same names; what the Store puts under barman's names, barman-cloud-wal-restore fetches.
func TestBarmanCloudInterop(t *testing.T) {
	t.Parallel() // each test runs an Azurite of its own
	archive, restore := barmanCloud(t)
	srv := azuritetest.Start(t)
	name := srv.Container(t)
	url := srv.Endpoint + "/" + name + "/pg/archive"
	st, err := azureblob.New(azureblob.Options{
		Endpoint: srv.Endpoint, Account: srv.Account, AccountKey: srv.AccountKey, Container: name, Prefix: "pg/archive",
		BlockSize: azureblob.MinBlockSize, // the compressed segment goes up as several blocks
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	t.Run("barman archives, the store reads", func(t *testing.T) {
		seg := walSegment(t)
		walPath := filepath.Join(dir, "000000010000000000000001")
		history := filepath.Join(dir, "00000002.history")
		if err := os.WriteFile(walPath, seg, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(history, []byte("1\t0/3000000\tno recovery target specified\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		runBarman(t, srv, archive, "--gzip", url, "main", walPath)
		runBarman(t, srv, archive, url, "main", history)
		var keys []string
		for info, err := range st.List(ctxT(t), "main/") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		// Key order: timeline 1's directory before timeline 2's history file.
		want := []string{"main/wals/0000000100000000/000000010000000000000001.gz", "main/wals/00000002.history"}
		if !slices.Equal(keys, want) {
			t.Fatalf("listed %q, want %q", keys, want)
		}
		r, _, err := st.Get(ctxT(t), want[0])
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		gz, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(gz, []byte{0x1f, 0x8b}) || len(gz) >= len(seg) {
			t.Fatalf("barman's object is no gzip of the segment (%d bytes)", len(gz))
		}
		zr, err := compression.Reader(compression.Gzip, bytes.NewReader(gz), 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, seg) {
			t.Fatalf("barman's gzip decompresses to %d other bytes (%v)", len(got), err)
		}
	})

	t.Run("the store archives, barman restores", func(t *testing.T) {
		seg := walSegment(t)
		gz, err := compression.Compress(compression.Gzip, seg, 4)
		if err != nil {
			t.Fatal(err)
		}
		key := "main/wals/0000000100000000/000000010000000000000002" + compression.Gzip.Ext()
		// Unsized, as the WAL archiver streams it: staged blocks, committed IfAbsent.
		if err := st.Put(ctxT(t), key, io.MultiReader(bytes.NewReader(gz)), objectstore.PutOptions{Size: -1, IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(dir, "restored")
		runBarman(t, srv, restore, url, "main", "000000010000000000000002", dest)
		got, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, seg) {
			t.Fatalf("barman restored %d bytes that differ from the %d-byte segment", len(got), len(seg))
		}
	})
}
