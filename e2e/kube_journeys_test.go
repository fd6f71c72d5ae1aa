package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
)

// output runs kubectl with stdin and answers its standard output as it is (a WAL segment is
// binary); the error carries its standard error.
func (k *kubeStack) output(t *testing.T, stdin io.Reader, args ...string) []byte {
	t.Helper()
	cmd := k.command(args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// secretValue is one key of one of the suite's Secrets.
func (k *kubeStack) secretValue(t *testing.T, name, key string) string {
	t.Helper()
	out := k.run(t, "-n", "plinth", "get", "secret", name, "-o", "jsonpath={.data."+key+"}")
	v, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(v) == 0 {
		t.Fatalf("Secret %s's %s: %q, %v", name, key, out, err)
	}
	return string(v)
}

// natsAsAdmin points the suite's NATS endpoint at the cluster's NATS (a port-forward to its
// Service) with the operators' user admin, whose password plinth-kube up put in plinth-nats.
func (k *kubeStack) natsAsAdmin(t *testing.T) {
	t.Helper()
	pw := filepath.Join(k.s.home, "nats-admin-password")
	if err := os.WriteFile(pw, []byte(k.secretValue(t, "plinth-nats", "admin-password")), 0o600); err != nil {
		t.Fatal(err)
	}
	k.s.endpoints.NATS = "nats://" + k.portForward(t, "svc/nats", 4222)
	k.s.endpoints.NATSUser, k.s.endpoints.NATSPasswordFile = "admin", pw
}

func (k *kubeStack) suite() *journeySuite { return k.s }

// pgdataInPlugin is overlays/local's data directory of the cnpgi-plugin Deployment
// (cnpgi-plugin.yaml).
const pgdataInPlugin = "/var/lib/plinth/pgdata"

var walNameRE = regexp.MustCompile(`^[0-9A-F]{24}$`)

// postgresURL is the URL of overlays/local's PostgreSQL, through a port-forward to its
// Service, as its superuser: the password is the one kube-up made (the Secret
// plinth-postgres), since that server trusts no connection.
func (k *kubeStack) postgresURL(t *testing.T) string {
	t.Helper()
	encoded := k.run(t, "-n", "plinth", "get", "secret", "plinth-postgres", "-o", "jsonpath={.data.postgres-password}")
	password, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil || len(password) == 0 {
		t.Fatalf("the Secret plinth-postgres has no postgres-password: %v", err)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", string(password)),
		Host: k.portForward(t, "svc/postgres", 5432), Path: "/plinth", RawQuery: "sslmode=disable"}
	return u.String()
}

// walSegmentForPlugin has the cluster's PostgreSQL complete a WAL segment and puts a copy of
// it in the cnpgi-plugin pod's data directory. The segment is read over PostgreSQL's own
// protocol (pg_read_binary_file, through a port-forward to its Service): kubectl exec can
// cut a large output short without an error (kubernetes/kubernetes#124571). The plugin's
// image holds only its program, so the copy goes in as a cluster's operator would put it
// there: a debug container (the stand-in busybox, kubectl debug --target, the pod's own user)
// writes it from its standard input through the plugin process's root (/proc/1/root, in the
// plugin container's process namespace), and its checksum there is compared with the one
// read.
func (k *kubeStack) walSegmentForPlugin(t *testing.T) (path, name string, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(k.ctx, 2*time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, k.postgresURL(t))
	if err != nil {
		t.Fatalf("the cluster's PostgreSQL through a port-forward: %v", err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, "CREATE TABLE IF NOT EXISTS e2e_wal (at timestamptz); INSERT INTO e2e_wal VALUES (now())"); err != nil {
		t.Fatal(err)
	}
	var segment []byte
	if err := db.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&name); err != nil || !walNameRE.MatchString(name) {
		t.Fatalf("switch WAL in the cluster's PostgreSQL: %q, %v", name, err)
	}
	if err := db.QueryRow(ctx, "SELECT pg_read_binary_file('pg_wal/' || $1)", name).Scan(&segment); err != nil {
		t.Fatalf("read %s from the cluster's PostgreSQL: %v", name, err)
	}
	sum := sha256.Sum256(segment)

	pod := k.run(t, "-n", "plinth", "get", "pod", "-l", "app.kubernetes.io/name=cnpgi-plugin", "--field-selector=status.phase=Running",
		"-o", "jsonpath={.items[0].metadata.name}")
	debugger := "wal-copy-" + randomHex(t, 3)
	k.run(t, "-n", "plinth", "debug", "pod/"+pod, "-c", debugger, "--image=docker.io/library/busybox:1.37-musl", "--image-pull-policy=Never",
		"--target=cnpgi-plugin", "--profile=restricted", "--", "sleep", "600")
	if err := eventually(time.Minute, 200*time.Millisecond, func() error {
		running, err := k.try("-n", "plinth", "get", "pod", pod, "-o",
			`jsonpath={.status.ephemeralContainerStatuses[?(@.name=="`+debugger+`")].state.running.startedAt}`)
		if err == nil && strings.TrimSpace(running) == "" {
			err = fmt.Errorf("not running yet")
		}
		return err
	}); err != nil {
		t.Fatalf("debug container %s in %s: %v", debugger, pod, err)
	}
	dir := "/proc/1/root" + pgdataInPlugin + "/pg_wal"
	written := k.output(t, bytes.NewReader(segment), "-n", "plinth", "exec", "-i", pod, "-c", debugger, "--",
		"sh", "-c", `mkdir -p "$0" && cat > "$0/$1" && sha256sum "$0/$1"`, dir, name)
	if got, _, _ := strings.Cut(string(written), " "); got != hex.EncodeToString(sum[:]) {
		t.Fatalf("the copy of %s in the plugin's pod has sha256 %q, want %x", name, got, sum)
	}
	return pgdataInPlugin + "/pg_wal/" + name, name, len(segment)
}

// s3 is the in-cluster S3 (overlays/local s3.yaml) as the suite's services reach it
// (http://s3:7070) and as the test does (a port-forward), with its root credentials (the
// Secret plinth-cnpgi-s3) and bucket, which is made when missing.
func (k *kubeStack) s3(t *testing.T, bucket string) *s3Store {
	t.Helper()
	store := &s3Store{Endpoint: "http://s3:7070", Host: "http://" + k.portForward(t, "svc/s3", 7070),
		AccessKeyID: k.secretValue(t, "plinth-cnpgi-s3", "access-key-id"), SecretAccessKey: k.secretValue(t, "plinth-cnpgi-s3", "secret-access-key"),
		Bucket: bucket}
	ctx, cancel := context.WithTimeout(k.ctx, callTimeout)
	defer cancel()
	if _, err := store.client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		if _, err := store.client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatalf("create bucket %s on the in-cluster S3: %v", bucket, err)
		}
	}
	return store
}

// storedWAL says whether the in-cluster S3's bucket (overlays/local s3.yaml) holds a
// non-empty object of that name under the server's WAL prefix in barman's layout.
func (k *kubeStack) storedWAL(t *testing.T, server, name string) error {
	t.Helper()
	objects, err := k.storedWALs(t, server)
	if err != nil {
		return err
	}
	for _, o := range objects {
		if strings.HasPrefix(filepath.Base(o.key), name) && o.size > 0 {
			return nil
		}
	}
	return fmt.Errorf("bucket plinth-pg-archive under clusters/%s/wals/ holds %v", server, objects)
}

type storedObject struct {
	key  string
	size int64
}

func (o storedObject) String() string { return o.key }

// storedWALs lists everything under the server's WAL prefix in the in-cluster S3's bucket.
func (k *kubeStack) storedWALs(t *testing.T, server string) ([]storedObject, error) {
	t.Helper()
	if k.pgArchive == nil {
		k.pgArchive = k.s3(t, "plinth-pg-archive")
	}
	ctx, cancel := context.WithTimeout(k.ctx, callTimeout)
	defer cancel()
	var out []storedObject
	pages := s3.NewListObjectsV2Paginator(k.pgArchive.client(), &s3.ListObjectsV2Input{
		Bucket: aws.String("plinth-pg-archive"), Prefix: aws.String("clusters/" + server + "/wals/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			// A kubelet restart (the fault check) ends every port-forward: the next call
			// makes a new one.
			k.pgArchive = nil
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, storedObject{aws.ToString(o.Key), aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}
