package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	walpb "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

// composeContainer answers the id of the project's (one) container of service.
func (c *composeStack) composeContainer(t *testing.T, service string) string {
	t.Helper()
	id, err := dockerOut(c.ctx, c.env, "ps", "-q", "--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil || id == "" || strings.Contains(id, "\n") {
		t.Fatalf("the running container of %s: %q, %v", service, id, err)
	}
	return id
}

// natsAsAdmin points the suite's NATS endpoint at the project's published NATS port with the
// operator's user, admin, whose password the nats service generated into the nats-admin volume.
func (c *composeStack) natsAsAdmin(t *testing.T) {
	t.Helper()
	pw := filepath.Join(c.s.home, "nats-admin-password")
	if err := os.WriteFile(pw, volumeFile(t, c.ctx, c.env, c.project, "nats-admin", "password", "0:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.s.endpoints.NATS = "nats://127.0.0.1:" + strconv.Itoa(4222+c.offset)
	c.s.endpoints.NATSUser, c.s.endpoints.NATSPasswordFile = "admin", pw
}

// walSegmentForPlugin has the compose PostgreSQL complete a WAL segment (a write, then
// pg_switch_wal) and puts a copy of it where the cnpgi-plugin container reads it, as the
// instance's PGDATA is shared with the plugin's sidecar in a CloudNativePG pod: in the cnpgi
// volume's pgdata/pg_wal (PLINTH_CNPGI_PGDATA), owned by the plugin's user. It answers the path in the plugin's container,
// the segment's name and its size.
func (c *composeStack) walSegmentForPlugin(t *testing.T) (path, name string, size int) {
	t.Helper()
	pg := c.composeContainer(t, "postgres")
	name, err := dockerOut(c.ctx, c.env, "exec", pg, "psql", "-U", "postgres", "-d", "plinth", "-qtAc",
		"CREATE TABLE IF NOT EXISTS e2e_wal (at timestamptz); INSERT INTO e2e_wal VALUES (now()); SELECT pg_walfile_name(pg_switch_wal())")
	if err != nil || len(name) != 24 {
		t.Fatalf("switch WAL in the compose PostgreSQL: %q, %v", name, err)
	}
	read := exec.CommandContext(c.ctx, "docker", "exec", pg, "cat", "/var/lib/postgresql/data/pg_wal/"+name)
	read.Env = c.env
	segment, err := read.Output()
	if err != nil {
		t.Fatalf("read %s from the compose PostgreSQL: %v", name, err)
	}
	write := exec.CommandContext(c.ctx, "docker", "run", "-i", "--rm", "--user", "65532:65532", "-v", c.project+"_cnpgi:/v",
		"--entrypoint", "sh", "busybox:1.37-musl", "-c", `mkdir -p /v/pgdata/pg_wal && cat > /v/pgdata/pg_wal/"$0"`, name)
	write.Env = c.env
	write.Stdin = bytes.NewReader(segment)
	if out, err := write.CombinedOutput(); err != nil {
		t.Fatalf("copy %s into the cnpgi volume: %v\n%s", name, err, out)
	}
	return "/var/lib/plinth/pgdata/pg_wal/" + name, name, len(segment)
}

// walCluster is the CloudNativePG Cluster definition of server, with this plugin as its WAL
// archiver, as the operator sends it with every call.
func walCluster(server string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",`+
		`"metadata":{"name":%q,"namespace":"default"},`+
		`"spec":{"instances":1,"plugins":[{"name":"cnpgi.plinth.dev","isWALArchiver":true}]}}`, server)
}

// walStack is a stack whose containerised cnpgi-plugin archives segments its own PostgreSQL
// wrote (compose, Kubernetes).
type walStack interface {
	suite() *journeySuite
	// walSegmentForPlugin has the stack's PostgreSQL complete a WAL segment (a write, then
	// pg_switch_wal) and puts a copy where the plugin reads it, inside its PGDATA as an
	// instance pod's sidecar would find it; it answers that path, the segment's name and size.
	walSegmentForPlugin(t *testing.T) (path, name string, size int)
	// storedWAL says whether the plugin's store holds an object of server's segment name.
	storedWAL(t *testing.T, server, name string) error
}

// archiveSegment has the stack's cnpgi-plugin archive a segment its PostgreSQL wrote
// (walSegmentForPlugin) for server through its gateway, and answers its name and size.
func archiveSegment(t *testing.T, st walStack, token, server string) (name string, size int) {
	t.Helper()
	path, name, size := st.walSegmentForPlugin(t)
	req := &walpb.WALArchiveRequest{ClusterDefinition: walCluster(server), SourceFileName: path}
	if _, err := walpb.NewWALClient(st.suite().gw).Archive(withToken(callCtx(t), token), req); err != nil {
		t.Fatalf("WAL Archive of %s through the gateway: %v", path, err)
	}
	return name, size
}

// lastWAL is WAL Status's last archived segment of server, through the gateway.
func lastWAL(t *testing.T, gw grpc.ClientConnInterface, token, server string) (string, error) {
	t.Helper()
	st, err := walpb.NewWALClient(gw).Status(withToken(callCtx(t), token), &walpb.WALStatusRequest{ClusterDefinition: walCluster(server)})
	return st.GetLastWal(), err
}

// journeyStackCNPGIArchive: a WAL segment the stack's PostgreSQL really wrote is archived by
// its containerised cnpgi-plugin through its gateway (mutual TLS from the gateway to the
// plugin), WAL Status names it, the object is in the plugin's store and the plugin's
// WALArchived event is on the stack's NATS.
func journeyStackCNPGIArchive(t *testing.T, st walStack, prefix string) {
	s := st.suite()
	server := prefix + "-" + randomHex(t, 4)
	_, err := walpb.NewWALClient(s.gw).Archive(callCtx(t), &walpb.WALArchiveRequest{ClusterDefinition: walCluster(server), SourceFileName: "/var/lib/plinth/pgdata/pg_wal/000000010000000000000001"})
	wantCode(t, "WAL Archive without a token", err, codes.Unauthenticated)

	token := s.login(t)
	start := time.Now().Add(-time.Second)
	name, size := archiveSegment(t, st, token, server)
	if last, err := lastWAL(t, s.gw, token, server); err != nil || last != name {
		t.Errorf("WAL Status through the gateway: %q, %v; want the last archived segment %s", last, err, name)
	}
	if err := st.storedWAL(t, server, name); err != nil {
		t.Errorf("no archived object for %s of %s in the plugin's store: %v", name, server, err)
	}
	ev := waitWALArchived(t, s.endpoints, server, start)
	if !slices.Contains(ev.GetWalNames(), name) || ev.GetSizeBytes() != int64(size) || ev.GetStoredBytes() <= 0 {
		t.Errorf("event %v, want %s of %d bytes stored", ev, name, size)
	}
}

func (c *composeStack) suite() *journeySuite { return c.s }

// storedWAL looks for the object in the cnpgi volume's POSIX store.
func (c *composeStack) storedWAL(t *testing.T, server, name string) error {
	found, err := dockerOut(c.ctx, c.env, "run", "--rm", "--user", "65532:65532", "-v", c.project+"_cnpgi:/v:ro",
		"--entrypoint", "find", "busybox:1.37-musl", "/v/store", "-path", "*/"+server+"/wals/*", "-name", name+"*")
	if err == nil && found == "" {
		err = fmt.Errorf("find found nothing")
	}
	return err
}

// s3Store is an S3 server a stack's services reach at Endpoint and the test at Host, with
// one bucket for the test.
type s3Store struct {
	// Endpoint is the address the stack's services use; Host the test's.
	Endpoint, Host  string
	AccessKeyID     string
	SecretAccessKey string
	Bucket          string
}

// startS3 runs a versitygw (make tools-s3's) in a container on the project's network, where
// the compose services reach it as http://s3:7070; the test reaches it on a published
// 127.0.0.1 port. It is removed when the test ends.
func (c *composeStack) startS3(t *testing.T) *s3Store {
	t.Helper()
	bin, err := s3test.Binary()
	if err != nil {
		skipOrFail(t, "%v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &s3Store{Endpoint: "http://s3:7070", Host: "http://127.0.0.1:" + strconv.Itoa(port),
		AccessKeyID: "plinth-compose-key", SecretAccessKey: "plinth-compose-" + randomHex(t, 8), Bucket: "lvmd-backups"}
	name := c.project + "-s3"
	id, err := dockerOut(c.ctx, c.env, "run", "-d", "--rm", "--name", name, "--network", c.project+"_default", "--network-alias", "s3",
		"-p", "127.0.0.1:"+strconv.Itoa(port)+":7070", "-v", bin+":/usr/local/bin/versitygw:ro",
		"-e", "ROOT_ACCESS_KEY_ID="+s.AccessKeyID, "-e", "ROOT_SECRET_ACCESS_KEY="+s.SecretAccessKey,
		"--entrypoint", "sh", "debian:bookworm-slim", "-c", "mkdir -p /data && exec versitygw --port :7070 posix /data")
	if err != nil {
		t.Fatalf("start versitygw on the compose network: %v: %s", err, id)
	}
	t.Cleanup(func() {
		if out, err := dockerOut(context.Background(), c.env, "rm", "-f", name); err != nil {
			t.Errorf("remove the S3 container: %v: %s", err, out)
		}
	})
	client := s.client()
	if err := eventually(30*time.Second, 200*time.Millisecond, func() error {
		_, err := client.CreateBucket(callCtx(t), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)})
		return err
	}); err != nil {
		logs, _ := dockerOut(c.ctx, c.env, "logs", name)
		t.Fatalf("create bucket %s on the compose S3: %v\n%s", s.Bucket, err, logs)
	}
	return s
}

func (s *s3Store) client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", UsePathStyle: true, BaseEndpoint: aws.String(s.Host),
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKeyID, s.SecretAccessKey, ""),
	})
}

// journeyLvmdBackup: an operator creates a volume on the stack's containerised lvmd-agent
// through its gateway (mutual TLS to the agent) and backs it up to the stack's S3 server;
// plinth.lvmd.v1.JobService (through the gateway too) reports the job complete with every byte
// copied, and the objects are in the bucket.
func journeyLvmdBackup(t *testing.T, s *journeySuite, store *s3Store) {
	token := s.login(t)
	lv := lvmdpb.NewLVServiceClient(s.gw)
	volume := "bk-" + randomHex(t, 3)
	if _, err := lv.CreateLV(withToken(callCtx(t), token), &lvmdpb.CreateLVRequest{Name: volume, SizeGb: 1}); err != nil {
		t.Fatalf("CreateLV %s through the gateway: %v", volume, err)
	}
	t.Cleanup(func() {
		_, _ = lv.RemoveLV(withToken(callCtx(t), token), &lvmdpb.RemoveLVRequest{Name: volume})
	})
	name := "backup-" + volume
	src := &lvmdpb.DataSource_S3{Endpoint: store.Endpoint, Path: store.Bucket + "/" + name, AccessKeyId: store.AccessKeyID, SecretAccessKey: store.SecretAccessKey}
	if _, err := lv.CreateBackup(withToken(callCtx(t), token), &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{
		Name: name, VolumeHandle: volume, DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: src}}}}); err != nil {
		t.Fatalf("CreateBackup through the gateway: %v", err)
	}
	jobs := jobspb.NewJobServiceClient(s.gw)
	err := eventually(3*time.Minute, 500*time.Millisecond, func() error {
		res, err := jobs.ListJobs(withToken(callCtx(t), token), &jobspb.ListJobsRequest{})
		if err != nil {
			return err
		}
		for _, j := range res.GetJobs() {
			if j.GetName() != name {
				continue
			}
			switch j.GetState() {
			case jobspb.JobState_JOB_STATE_COMPLETE:
				if j.GetBytesDone() != 1<<30 || j.GetSizeBytes() != 1<<30 {
					t.Fatalf("the complete backup copied %d of %d bytes", j.GetBytesDone(), j.GetSizeBytes())
				}
				return nil
			case jobspb.JobState_JOB_STATE_ERROR:
				t.Fatalf("backup job failed: %v", j)
			}
			return fmt.Errorf("backup job %s is %v (%d of %d bytes)", name, j.GetState(), j.GetBytesDone(), j.GetSizeBytes())
		}
		return fmt.Errorf("no job %s yet", name)
	})
	if err != nil {
		t.Fatalf("backup through the gateway: %v", err)
	}
	objects, err := store.client().ListObjectsV2(callCtx(t), &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket), Prefix: aws.String(name + "/")})
	if err != nil || len(objects.Contents) == 0 {
		t.Fatalf("objects of the backup in the S3 bucket: %v, %v", objects, err)
	}
	var stored int64
	for _, o := range objects.Contents {
		stored += aws.ToInt64(o.Size)
	}
	t.Logf("backup of a 1 GiB volume: %d objects, %d bytes stored", len(objects.Contents), stored)
}
