package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	volumespb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/storage/s3test"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

// bucket is a test's S3 bucket on a real server.
type bucket struct {
	srv  *s3test.Server
	name string
}

func newBucket(t testing.TB, e *env) *bucket {
	t.Helper()
	srv := s3test.Start(t)
	e.secrets = append(e.secrets, srv.SecretAccessKey)
	return &bucket{srv: srv, name: srv.Bucket(t)}
}

// source is a DataSource.S3 for path in the bucket.
func (b *bucket) source(path, key string) *lvmdpb.DataSource_S3 {
	return &lvmdpb.DataSource_S3{Path: b.name + "/" + path, Endpoint: b.srv.Endpoint,
		AccessKeyId: b.srv.AccessKeyID, SecretAccessKey: b.srv.SecretAccessKey, EncryptionKey: key}
}

// manifest reads a backup's manifest straight from the bucket.
func (b *bucket) manifest(t testing.TB, path string) *backup.Manifest {
	t.Helper()
	out, err := b.srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(path + "/manifest.json")})
	if err != nil {
		t.Fatalf("manifest of %s: %v", path, err)
	}
	defer out.Body.Close()
	data, _ := io.ReadAll(out.Body)
	m, err := backup.ParseManifest(data)
	if err != nil {
		t.Fatalf("manifest of %s: %v\n%s", path, err, data)
	}
	return m
}

// fill writes random blocks into a volume at its start, middle and end (the rest stays as
// the fresh VG's zeros), through lvmtest's own mapping, and returns the volume's SHA-256.
func fill(t testing.TB, vg *lvmtest.VG, lv string, size int64) string {
	t.Helper()
	block := make([]byte, 4<<20)
	for _, off := range []int64{0, size/2 - 1<<20, size - int64(len(block))} {
		_, _ = rand.Read(block)
		vg.WriteLV(t, lv, off, block)
	}
	return vg.HashLV(t, lv, size)
}

// backupUntilDone calls CreateBackup until the job leaves INPROGRESS.
func backupUntilDone(t testing.TB, ctx context.Context, a *agent, req *lvmdpb.CreateBackupRequest) *lvmdpb.BackupState {
	t.Helper()
	for {
		res, err := a.lv.CreateBackup(ctx, req)
		if err != nil {
			t.Fatalf("CreateBackup: %v", err)
		}
		if res.GetBackupState().GetState() != lvmdpb.StateType_INPROGRESS {
			return res.GetBackupState()
		}
		select {
		case <-ctx.Done():
			t.Fatal("the backup did not finish")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func newKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

func TestBackupAndRestoreThroughS3(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 12 << 30})
	b := newBucket(t, e)
	a := e.start(t, e.config(t))
	vg := e.vgs[0]
	for _, tc := range []struct {
		name string
		key  string
	}{{"plain", ""}, {"encrypted", newKey()}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			if tc.key != "" {
				e.secrets = append(e.secrets, tc.key)
			}
			src, path := "src-"+tc.name, "backups/"+tc.name
			if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: src, SizeGb: 1}); err != nil {
				t.Fatal(err)
			}
			want := fill(t, vg, src, 1<<30)
			req := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-" + tc.name, VolumeHandle: src,
				DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source(path, tc.key)}}}}
			first, err := a.lv.CreateBackup(ctx, req)
			if err != nil || first.GetBackupState().GetState() != lvmdpb.StateType_INPROGRESS || first.GetBackupState().GetName() != "bk-"+tc.name {
				t.Fatalf("first call: %v %v", first, err)
			}
			if st := backupUntilDone(t, ctx, a, req); st.GetState() != lvmdpb.StateType_COMPLETE {
				t.Fatalf("backup ended %v", st)
			}
			if again := backupUntilDone(t, ctx, a, req); again.GetState() != lvmdpb.StateType_COMPLETE {
				t.Fatalf("a later call must report the finished job: %v", again)
			}
			m := b.manifest(t, path)
			if m.SizeBytes != 1<<30 || m.VolumeHandle != src || m.Node != e.node || m.Source != "physical-extents" || len(m.Extents) == 0 ||
				m.Compression != "zstd" || m.Encrypted != (tc.key != "") || (m.VolumeSHA256 == want) == m.Encrypted {
				t.Fatalf("manifest %+v", m)
			}

			// Synchronous restore: the volume holds the backup when CreateLV returns.
			res, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "sync-" + tc.name, SizeGb: 1,
				DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: b.source(path, tc.key)}}})
			if err != nil || res.GetVolume().GetSizeGb() != 1 {
				t.Fatalf("synchronous restore: %v %v", res, err)
			}
			if got := vg.HashLV(t, "sync-"+tc.name, 1<<30); got != want {
				t.Fatal("the restored volume differs from the backed-up one")
			}
			if tc.key == "" {
				// Asynchronous: CreateLV returns at once, the job finishes later.
				if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "async", SizeGb: 1,
					DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source(path, tc.key)}}}); err != nil {
					t.Fatal(err)
				}
				waitJob(t, ctx, e, "async", eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE)
				if got := vg.HashLV(t, "async", 1<<30); got != want {
					t.Fatal("the asynchronously restored volume differs from the backed-up one")
				}
				return
			}
			// A wrong or missing key is refused before any volume is created.
			for _, key := range []string{newKey(), ""} {
				_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "wrongkey", SizeGb: 1,
					DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: b.source(path, key)}}})
				wantCode(t, err, codes.InvalidArgument, "encryption_key")
			}
			if l, _ := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{}); slices.ContainsFunc(l.GetVolumes(), func(v *lvmdpb.LogicalVolume) bool { return v.GetName() == "wrongkey" }) {
				t.Fatal("a refused restore left a volume")
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		// 2 GiB backed up and 2 GiB restored: ctxT's 3 minutes ran out once under the race
		// detector beside other packages' tests.
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		// A grown (multi-segment) volume backs up whole; it does not fit a smaller volume.
		if _, err := a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: "src-plain", SizeGb: 2}); err != nil {
			t.Fatal(err)
		}
		want := fill(t, vg, "src-plain", 2<<30)
		big := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "big", VolumeHandle: "src-plain",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("backups/big", "")}}}}
		if st := backupUntilDone(t, ctx, a, big); st.GetState() != lvmdpb.StateType_COMPLETE {
			t.Fatalf("backup ended %v", st)
		}
		restore := func(name string, gb uint64, s *lvmdpb.DataSource_S3) error {
			_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: name, SizeGb: gb,
				DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: s}}})
			return err
		}
		wantCode(t, restore("small", 1, b.source("backups/big", "")), codes.InvalidArgument, "size_gb", "need 2 GiB")
		if err := restore("bigcopy", 2, b.source("backups/big", "")); err != nil {
			t.Fatal(err)
		}
		if vg.HashLV(t, "bigcopy", 2<<30) != want {
			t.Fatal("the multi-segment volume did not restore identically")
		}
		wantCode(t, restore("none", 1, b.source("backups/missing", "")), codes.NotFound, "no backup")
		bad := b.source("backups/big", "")
		bad.SecretAccessKey = "wrong-secret-key-1234"
		e.secrets = append(e.secrets, bad.SecretAccessKey)
		wantCode(t, restore("denied", 1, bad), codes.PermissionDenied)
		// An existing volume is not overwritten by a restore.
		wantCode(t, restore("src-plain", 2, b.source("backups/big", "")), codes.AlreadyExists, "not restored")

		// A damaged backup: a synchronous restore answers DataLoss and leaves no volume; an
		// asynchronous one fails its job (the volume is the caller's to remove).
		obj := filepath.Join(b.srv.Dir, b.name, "backups", "plain", "volume.img.zst")
		data, err := os.ReadFile(obj)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(data) / 3; i < len(data)/3+64; i++ {
			data[i] ^= 0xff
		}
		if err := os.WriteFile(obj, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wantCode(t, restore("damaged", 1, b.source("backups/plain", "")), codes.DataLoss, "failed verification")
		if l, _ := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{}); slices.ContainsFunc(l.GetVolumes(), func(v *lvmdpb.LogicalVolume) bool { return v.GetName() == "damaged" }) {
			t.Fatal("a failed synchronous restore left its volume")
		}
		if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "damaged-async", SizeGb: 1,
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("backups/plain", "")}}}); err != nil {
			t.Fatal(err)
		}
		if ev := waitJob(t, ctx, e, "damaged-async", eventsv1.VolumeJobState_VOLUME_JOB_STATE_ERROR); !strings.Contains(ev.GetMessage(), "checksum") {
			t.Fatalf("damaged restore's event: %v", ev)
		}

		_, err = a.lv.CreateBackup(ctx, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "x", VolumeHandle: "missing",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("backups/x", "")}}}})
		wantCode(t, err, codes.NotFound)
		// A path holding another backup is never written over.
		taken := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "other", VolumeHandle: "src-plain",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("backups/big", "")}}}}
		if st := backupUntilDone(t, ctx, a, taken); st.GetState() != lvmdpb.StateType_ERROR || !strings.Contains(st.GetMsg(), `"big"`) {
			t.Fatalf("backup over another: %v", st)
		}
	})

	// The job events: each backup went IN_PROGRESS then COMPLETE, with its location and no
	// credential anywhere in them.
	p := e.pool(t)
	states := outboxEvents(t, p, events.SubjectOf(&eventsv1.BackupStateChanged{}), func() *eventsv1.BackupStateChanged { return &eventsv1.BackupStateChanged{} })
	var done *eventsv1.BackupStateChanged
	for _, s := range states {
		raw, _ := json.Marshal(s.String())
		for _, secret := range e.secrets {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("a secret in an event: %v", s)
			}
		}
		if s.GetName() == "bk-encrypted" && s.GetState() == eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE {
			done = s
		}
	}
	if done == nil || !done.GetEncrypted() || done.GetBytesDone() != 1<<30 || done.GetKind() != eventsv1.VolumeJobKind_VOLUME_JOB_KIND_BACKUP ||
		done.GetLocation() != b.srv.Endpoint+"/"+b.name+"/backups/encrypted" {
		t.Fatalf("completion event %v", done)
	}
}

// waitJob waits for the job event of a restore (or backup) name in state.
func waitJob(t testing.TB, ctx context.Context, e *env, name string, state eventsv1.VolumeJobState) *eventsv1.BackupStateChanged {
	t.Helper()
	p := e.pool(t)
	var found *eventsv1.BackupStateChanged
	eventually(t, ctx, "job "+name+" "+state.String(), func() bool {
		for _, s := range outboxEvents(t, p, events.SubjectOf(&eventsv1.BackupStateChanged{}), func() *eventsv1.BackupStateChanged { return &eventsv1.BackupStateChanged{} }) {
			if s.GetName() == name && s.GetState() == state {
				found = s
				return true
			}
			if s.GetName() == name && s.GetState() == eventsv1.VolumeJobState_VOLUME_JOB_STATE_ERROR && state != s.GetState() {
				t.Fatalf("job %s failed: %s", name, s.GetMessage())
			}
		}
		return false
	})
	return found
}

// TestDefaultS3Store: with PLINTH_LVMD_DEFAULT_S3_* (make up's dev S3), a backup and a restore
// that name only a path use the agent's endpoint and keys; a request naming any endpoint or
// credential is taken as it comes (lvmd's rule: no endpoint means AWS, keys are required).
func TestDefaultS3Store(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30})
	b := newBucket(t, e)
	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	if err := os.WriteFile(keyFile, []byte(b.srv.AccessKeyID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(b.srv.SecretAccessKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := e.start(t, e.config(t, func(c *app.Config) {
		c.DefaultS3Endpoint, c.DefaultS3AccessKeyFile, c.DefaultS3SecretKeyFile = b.srv.Endpoint, keyFile, secretFile
	}))
	ctx := ctxT(t)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	want := fill(t, e.vgs[0], "src", 1<<30)
	// The console learns of the default store from VolumeService (the endpoint, never the keys).
	if got, err := volumespb.NewVolumeServiceClient(a.conn).GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "src"}); err != nil ||
		got.GetDefaultBackupEndpoint() != b.srv.Endpoint {
		t.Fatalf("GetVolume with a default store: %v %v", got, err)
	}
	pathOnly := &lvmdpb.DataSource_S3{Path: b.name + "/default/src"}
	req := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-default", VolumeHandle: "src",
		DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: pathOnly}}}}
	if st := backupUntilDone(t, ctx, a, req); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("backup to the default store ended %v", st)
	}
	if m := b.manifest(t, "default/src"); m.VolumeHandle != "src" {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "restored", SizeGb: 1,
		DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: pathOnly}}}); err != nil {
		t.Fatalf("restore from the default store: %v", err)
	}
	if got := e.vgs[0].HashLV(t, "restored", 1<<30); got != want {
		t.Fatal("the volume restored from the default store differs")
	}
	// Any endpoint or credential in the request: the default is not mixed in.
	for _, s := range []*lvmdpb.DataSource_S3{
		{Path: b.name + "/x/y", Endpoint: b.srv.Endpoint},
		{Path: b.name + "/x/y", AccessKeyId: b.srv.AccessKeyID},
	} {
		_, err := a.lv.CreateBackup(ctx, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-explicit", VolumeHandle: "src",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: s}}}})
		wantCode(t, err, codes.InvalidArgument, "data_source.s3.")
	}
}
