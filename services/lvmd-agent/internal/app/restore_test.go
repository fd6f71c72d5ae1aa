package app_test

import (
	"context"
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
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// defaultStoreAgent starts an agent whose default S3 store is b's server, with its keys by
// file and its bucket left for the agent to find (the one bucket the keys list).
func defaultStoreAgent(t *testing.T, e *env, b *bucket) *agent {
	t.Helper()
	dir := t.TempDir()
	keyFile, secretFile := filepath.Join(dir, "id"), filepath.Join(dir, "secret")
	if err := os.WriteFile(keyFile, []byte(b.srv.AccessKeyID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(b.srv.SecretAccessKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return e.start(t, e.config(t, func(c *app.Config) {
		c.DefaultS3Endpoint, c.DefaultS3AccessKeyFile, c.DefaultS3SecretKeyFile = b.srv.Endpoint, keyFile, secretFile
	}))
}

// jobNamed finds a listed job by kind and name.
func jobNamed(t testing.TB, ctx context.Context, jobs jobspb.JobServiceClient, kind jobspb.JobKind, name string) *jobspb.Job {
	t.Helper()
	l, err := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{PageSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range l.GetJobs() {
		if j.GetKind() == kind && j.GetName() == name {
			return j
		}
	}
	return nil
}

// objects lists the keys under prefix in the bucket.
func (b *bucket) objects(t testing.TB, prefix string) []string {
	t.Helper()
	out, err := b.srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(b.name), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// TestBackupRestoreDeleteThroughJobService is issue #40's "volume backups end to end" on the
// agent: the default store named with its bucket, backup names checked, a listed backup
// restored into a new volume (verified byte for byte) and deleted with its objects, a failed
// backup said in words and dismissed, and every refusal naming its field before anything
// is created.
func TestBackupRestoreDeleteThroughJobService(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 6 << 30})
	b := newBucket(t, e)
	a := defaultStoreAgent(t, e, b)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	jobs := jobspb.NewJobServiceClient(a.conn)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	want := fill(t, e.vgs[0], "src", 1<<30)

	// The default store, named: its endpoint and the bucket it found (never its keys).
	got, err := jobspb.NewVolumeServiceClient(a.conn).GetVolume(ctx, &jobspb.GetVolumeRequest{Name: "src"})
	if err != nil || got.GetDefaultBackupEndpoint() != b.srv.Endpoint || got.GetDefaultBackupBucket() != b.name {
		t.Fatalf("GetVolume's default store: %v %v (want bucket %s)", got, err, b.name)
	}

	backupTo := func(name, path string) *lvmdpb.CreateBackupRequest {
		return &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: name, VolumeHandle: "src",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: &lvmdpb.DataSource_S3{Path: path}}}}}
	}
	// Backup names follow the suite's name rules: nothing starts for a bad one.
	for _, bad := range []string{"Bad Name!/..", "../up", "-x", "a/b", "sp ace"} {
		_, err := a.lv.CreateBackup(ctx, backupTo(bad, b.name+"/bad"))
		wantCode(t, err, codes.InvalidArgument, "backup.name")
	}
	if l, _ := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{}); len(l.GetJobs()) != 0 {
		t.Fatalf("a refused backup name left jobs: %v", l.GetJobs())
	}

	if st := backupUntilDone(t, ctx, a, backupTo("bk-1", b.name+"/backups/src/1")); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("backup to the default store ended %v", st)
	}
	bk := jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_BACKUP, "bk-1")
	if bk == nil || bk.GetState() != jobspb.JobState_JOB_STATE_COMPLETE {
		t.Fatalf("the backup's job: %v", bk)
	}

	// A backup to a bucket that does not exist fails in words naming the bucket and endpoint.
	if st := backupUntilDone(t, ctx, a, backupTo("bk-nobucket", "no-such-bucket-40/backups/src")); st.GetState() != lvmdpb.StateType_ERROR ||
		st.GetMsg() != "the bucket no-such-bucket-40 does not exist at "+b.srv.Endpoint {
		t.Fatalf("backup to a missing bucket: %v", st)
	}

	// Refusals of RestoreBackup: each names its field, and none creates a volume.
	restore := func(r *jobspb.RestoreBackupRequest) error { _, err := jobs.RestoreBackup(ctx, r); return err }
	wantCode(t, restore(&jobspb.RestoreBackupRequest{Name: "copy"}), codes.InvalidArgument, "backup_job_id")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "Bad Name!"}), codes.InvalidArgument, "name")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "small", SizeBytes: 1 << 29}), codes.InvalidArgument, "size_bytes", "1073741824")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", EncryptionKey: "short"}), codes.InvalidArgument, "encryption_key")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", DeviceClass: "nope"}), codes.NotFound, "nope")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId() + 1000, Name: "copy"}), codes.NotFound, "job")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "src"}), codes.AlreadyExists)
	failed := jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_BACKUP, "bk-nobucket")
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: failed.GetId(), Name: "copy"}), codes.FailedPrecondition, "not complete")
	l, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(l.GetVolumes(), func(v *lvmdpb.LogicalVolume) bool { return v.GetName() != "src" }) {
		t.Fatalf("a refused restore created a volume: %v", l.GetVolumes())
	}

	// The restore: a new volume in the class, filled from S3 and verified; its job is listed
	// and its end is an event, like a backup's.
	res, err := jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", SizeBytes: 2 << 30})
	if err != nil || res.GetJob().GetKind() != jobspb.JobKind_JOB_KIND_RESTORE || res.GetJob().GetName() != "copy" {
		t.Fatalf("RestoreBackup: %v %v", res, err)
	}
	waitJob(t, ctx, e, "copy", eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE)
	if e.vgs[0].HashLV(t, "copy", 1<<30) != want {
		t.Fatal("the volume restored through RestoreBackup differs from the backed-up one")
	}
	if v, err := jobspb.NewVolumeServiceClient(a.conn).GetVolume(ctx, &jobspb.GetVolumeRequest{Name: "copy"}); err != nil || v.GetVolume().GetSizeBytes() != 2<<30 {
		t.Fatalf("the restored volume: %v %v", v, err)
	}
	rj := jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_RESTORE, "copy")
	if rj.GetState() != jobspb.JobState_JOB_STATE_COMPLETE || rj.GetBytesDone() != 1<<30 || !strings.HasSuffix(rj.GetLocation(), "/backups/src/1") {
		t.Fatalf("the restore's job: %v", rj)
	}
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: rj.GetId(), Name: "copy2"}), codes.FailedPrecondition, "restore, not a backup")

	// Dismiss: only a failed job; it leaves the list.
	_, err = jobs.DismissJob(ctx, &jobspb.DismissJobRequest{Id: bk.GetId()})
	wantCode(t, err, codes.FailedPrecondition, "only a failed job")
	if _, err := jobs.DismissJob(ctx, &jobspb.DismissJobRequest{Id: failed.GetId()}); err != nil {
		t.Fatal(err)
	}
	if jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_BACKUP, "bk-nobucket") != nil {
		t.Fatal("a dismissed job is still listed")
	}
	_, err = jobs.DismissJob(ctx, &jobspb.DismissJobRequest{Id: failed.GetId()})
	wantCode(t, err, codes.NotFound)

	// Delete: the manifest and the data leave the bucket, then the job; a restore of it is
	// then NotFound.
	if keys := b.objects(t, "backups/src/1/"); len(keys) != 2 {
		t.Fatalf("the backup's objects before the delete: %v", keys)
	}
	del, err := jobs.DeleteBackup(ctx, &jobspb.DeleteBackupRequest{BackupJobId: bk.GetId()})
	if err != nil || del.GetObjectsDeleted() != 2 {
		t.Fatalf("DeleteBackup: %v %v", del, err)
	}
	if keys := b.objects(t, "backups/src/1/"); len(keys) != 0 {
		t.Fatalf("objects left after the delete: %v", keys)
	}
	if jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_BACKUP, "bk-1") != nil {
		t.Fatal("a deleted backup is still listed")
	}
	wantCode(t, restore(&jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "late"}), codes.NotFound)
	_, err = jobs.DeleteBackup(ctx, &jobspb.DeleteBackupRequest{BackupJobId: rj.GetId()})
	wantCode(t, err, codes.FailedPrecondition, "restore, not a backup")
	deleted := outboxEvents(t, e.pool(t), events.SubjectOf(&eventsv1.BackupDeleted{}), func() *eventsv1.BackupDeleted { return &eventsv1.BackupDeleted{} })
	if len(deleted) != 1 || deleted[0].GetName() != "bk-1" || deleted[0].GetObjectsDeleted() != 2 || deleted[0].GetNode() != e.node ||
		deleted[0].GetLocation() != b.srv.Endpoint+"/"+b.name+"/backups/src/1" {
		t.Fatalf("BackupDeleted events: %v", deleted)
	}
}

// TestRestoreAndDeleteInAnotherStore: a backup in a store that is not the agent's own is
// restored and deleted only with its credentials again (the agent never keeps them); wrong
// ones are refused in words, and no secret reaches an answer or the log.
func TestRestoreAndDeleteInAnotherStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30})
	b := newBucket(t, e)
	a := e.start(t, e.config(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	jobs := jobspb.NewJobServiceClient(a.conn)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	want := fill(t, e.vgs[0], "src", 1<<30)
	key := newKey()
	e.secrets = append(e.secrets, key)
	if st := backupUntilDone(t, ctx, a, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-own", VolumeHandle: "src",
		DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("own/src", key)}}}}); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("backup ended %v", st)
	}
	bk := jobNamed(t, ctx, jobs, jobspb.JobKind_JOB_KIND_BACKUP, "bk-own")
	creds := &jobspb.StoreCredentials{AccessKeyId: b.srv.AccessKeyID, SecretAccessKey: b.srv.SecretAccessKey}
	wrong := &jobspb.StoreCredentials{AccessKeyId: b.srv.AccessKeyID, SecretAccessKey: "wrong-secret-for-restore-40"}
	e.secrets = append(e.secrets, wrong.SecretAccessKey)

	_, err := jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", EncryptionKey: key})
	wantCode(t, err, codes.InvalidArgument, "credentials.access_key_id", "not the agent's own")
	_, err = jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", EncryptionKey: key,
		Credentials: &jobspb.StoreCredentials{AccessKeyId: "x"}})
	wantCode(t, err, codes.InvalidArgument, "credentials.secret_access_key")
	_, err = jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", EncryptionKey: key, Credentials: wrong})
	wantCode(t, err, codes.PermissionDenied, "access denied", b.srv.Endpoint, b.name)
	if strings.Contains(err.Error(), wrong.SecretAccessKey) {
		t.Fatal("the answer quotes the secret")
	}
	_, err = jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", Credentials: creds})
	wantCode(t, err, codes.InvalidArgument, "encryption_key")
	_, err = jobs.RestoreBackup(ctx, &jobspb.RestoreBackupRequest{BackupJobId: bk.GetId(), Name: "copy", Credentials: creds, EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, e, "copy", eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE)
	if e.vgs[0].HashLV(t, "copy", 1<<30) != want {
		t.Fatal("the encrypted backup restored through RestoreBackup differs")
	}

	_, err = jobs.DeleteBackup(ctx, &jobspb.DeleteBackupRequest{BackupJobId: bk.GetId()})
	wantCode(t, err, codes.InvalidArgument, "credentials.access_key_id")
	_, err = jobs.DeleteBackup(ctx, &jobspb.DeleteBackupRequest{BackupJobId: bk.GetId(), Credentials: wrong})
	wantCode(t, err, codes.PermissionDenied, "access denied")
	if keys := b.objects(t, "own/src/"); len(keys) != 2 {
		t.Fatalf("a refused delete removed objects: %v", keys)
	}
	if _, err := jobs.DeleteBackup(ctx, &jobspb.DeleteBackupRequest{BackupJobId: bk.GetId(), Credentials: creds}); err != nil {
		t.Fatal(err)
	}
	if keys := b.objects(t, "own/src/"); len(keys) != 0 {
		t.Fatalf("objects left after the delete: %v", keys)
	}
}
