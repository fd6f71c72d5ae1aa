package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// backupForConsole runs a real lvmd-agent backup for the Volumes page: it starts versitygw (an
// S3 server; the launcher configures none) with a bucket, creates a 1 GiB volume and backs it
// up through the gateway as an operator would, and waits through plinth.lvmd.v1.JobService
// (also through the gateway) until the job is complete with every byte copied. It returns the
// backup's name.
func backupForConsole(t *testing.T, root, gateway, password string) string {
	t.Helper()
	endpoint := startVersityGW(t, root, "console-backups")
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
	s3 := &lvmdpb.DataSource_S3{Endpoint: endpoint, Path: "console-backups/" + name, AccessKeyId: versityKeyID, SecretAccessKey: versitySecret}
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
				return name
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

// The root account of the test's versitygw.
const (
	versityKeyID  = "plinth-e2e-key"
	versitySecret = "plinth-e2e-secret"
)

// startVersityGW runs bin/versitygw over a temporary directory holding bucket until the test
// ends and returns its endpoint.
func startVersityGW(t *testing.T, root, bucket string) string {
	t.Helper()
	bin := filepath.Join(root, "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		skipOrFail(t, "no %s (make tools-s3): %v", bin, err)
	}
	dir := t.TempDir()
	// The posix backend's buckets are the directories of its root.
	if err := os.Mkdir(filepath.Join(dir, bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "--port", addr, "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+versityKeyID, "ROOT_SECRET_ACCESS_KEY="+versitySecret)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		if c, err := (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext(ctx, "tcp", addr); err == nil {
			_ = c.Close()
			return "http://" + addr
		}
		select {
		case <-exited:
			t.Fatal("versitygw exited at start")
		case <-ctx.Done():
			t.Fatalf("versitygw did not listen on %s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
