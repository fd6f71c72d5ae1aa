package e2e

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

// backupForConsole runs a real lvmd-agent backup for the Volumes page: it starts versitygw (an
// S3 server; the launcher configures none) with a bucket, creates a 1 GiB volume and backs it
// up through the gateway as an operator would, and waits through plinth.lvmd.v1.JobService
// (also through the gateway) until the job is complete with every byte copied. It returns the
// backup's name and the S3 server, for the console's own backup from a volume's page.
func backupForConsole(t *testing.T, gateway, password string) (string, consoleStore) {
	t.Helper()
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	conn, err := grpc.NewClient(gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway %s: %v", gateway, err)
	}
	defer conn.Close()
	login, err := authpb.NewAuthServiceClient(conn).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: password})
	if err != nil {
		t.Fatalf("Login through the gateway: %v", err)
	}
	token := login.GetToken()
	lv := lvmdpb.NewLVServiceClient(conn)
	volume := "console-bk-" + randomHex(t, 4)
	if _, err := lv.CreateLV(withToken(callCtx(t), token), &lvmdpb.CreateLVRequest{Name: volume, SizeGb: 1}); err != nil {
		t.Fatalf("CreateLV %s through the gateway: %v", volume, err)
	}
	name := "backup-" + volume
	s3 := &lvmdpb.DataSource_S3{Endpoint: srv.Endpoint, Path: bucket + "/" + name, AccessKeyId: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey}
	if _, err := lv.CreateBackup(withToken(callCtx(t), token), &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{
		Name: name, VolumeHandle: volume, DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: s3}}}}); err != nil {
		t.Fatalf("CreateBackup through the gateway: %v", err)
	}
	jobs := jobspb.NewJobServiceClient(conn)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := jobs.ListJobs(withToken(callCtx(t), token), &jobspb.ListJobsRequest{})
		if err != nil {
			t.Fatalf("ListJobs through the gateway: %v", err)
		}
		for _, j := range res.GetJobs() {
			if j.GetName() != name {
				continue
			}
			switch j.GetState() {
			case jobspb.JobState_JOB_STATE_COMPLETE:
				if j.GetBytesDone() != 1<<30 || j.GetSizeBytes() != 1<<30 {
					t.Fatalf("a complete backup copied %d of %d bytes", j.GetBytesDone(), j.GetSizeBytes())
				}
				return name, consoleStore{srv: srv, bucket: bucket}
			case jobspb.JobState_JOB_STATE_ERROR:
				t.Fatalf("the backup failed: %s", j.GetMessage())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backup %s did not complete: %v", name, res.GetJobs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// consoleStore is the S3 server and bucket of backupForConsole.
type consoleStore struct {
	srv    *s3test.Server
	bucket string
}

// env is the store for browser.mjs: a volume's page backs up there, naming the endpoint and
// keys (the launcher's lvmd-agent has no default store).
func (c consoleStore) env() []string {
	return []string{"LVMD_S3_ENDPOINT=" + c.srv.Endpoint, "LVMD_S3_BUCKET=" + c.bucket,
		"LVMD_S3_ACCESS_KEY_ID=" + c.srv.AccessKeyID, "LVMD_S3_SECRET_ACCESS_KEY=" + c.srv.SecretAccessKey}
}
