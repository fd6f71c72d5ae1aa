// Package s3test runs a real S3-compatible server, versitygw over a temporary directory, for
// tests. `make tools-s3` builds the pinned binary into bin/; tests skip loudly without it,
// and fail under PLINTH_TEST_STRICT=1.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// Server is one running versitygw.
type Server struct {
	// Endpoint is http://127.0.0.1:PORT.
	Endpoint string
	// AccessKeyID and SecretAccessKey are the root account's credentials.
	AccessKeyID, SecretAccessKey string
	// Dir is the backing directory: each bucket is a subdirectory.
	Dir string
}

// Binary finds versitygw: $PLINTH_VERSITYGW, the repository's bin/versitygw, or PATH.
func Binary() (string, error) {
	if p := os.Getenv("PLINTH_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PLINTH_VERSITYGW: %w", err)
		}
		return p, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				p := filepath.Join(dir, "bin", "versitygw")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
		}
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("versitygw not found (run `make tools-s3`, or set PLINTH_VERSITYGW)")
	}
	return p, nil
}

// Start runs versitygw on a free 127.0.0.1 port with a fresh directory until the test ends.
// posixArgs are versitygw's posix backend arguments for dir: its metadata goes in extended
// attributes where dir's file system keeps user ones, else in a sidecar directory (tmpfs
// before Linux 6.6 has none: a kernelvm guest's /tmp).
func posixArgs(t testing.TB, dir string) []string {
	if err := syscall.Setxattr(dir, "user.plinth-s3test", []byte("1"), 0); err == nil {
		return []string{dir}
	}
	return []string{"--sidecar", t.TempDir(), dir}
}

func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	s := &Server{AccessKeyID: "plinth-test-key", SecretAccessKey: "plinth-test-secret-" + randomSuffix(t), Dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		cmd := exec.Command(bin, append([]string{"--port", addr, "posix"}, posixArgs(t, s.Dir)...)...)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKeyID, "ROOT_SECRET_ACCESS_KEY="+s.SecretAccessKey)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start versitygw: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		// A deadline, not a measure: ~1 s here, tens of seconds in a kernelvm guest
		// (software emulation) on a loaded host.
		if waitListening(addr, exited, 90*time.Second) {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			s.Endpoint = "http://" + addr
			return s
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("versitygw did not start on %s:\n%s", addr, out.String())
		}
	}
}

// Client is an S3 client for the server's root account.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", UsePathStyle: true, BaseEndpoint: aws.String(s.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKeyID, s.SecretAccessKey, ""),
	})
}

// Bucket creates a bucket with a name unique to the test and returns it.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name := strings.ReplaceAll(testenv.UniqueName(t, "b"), "_", "-")
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	name = strings.Trim(name, "-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func randomSuffix(t testing.TB) string {
	name := testenv.UniqueName(t, "s")
	return name[len(name)-8:]
}
