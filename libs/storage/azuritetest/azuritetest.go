// Package azuritetest runs a real Azure Blob Storage emulator, Azurite's blob service over a
// temporary directory, for tests. `make tools-s3` installs the pinned Azurite and writes
// bin/azurite-blob; tests skip loudly without it, and fail under PLINTH_TEST_STRICT=1.
package azuritetest

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

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// Azurite's single built-in account, the same in every installation (the "well-known
// development storage account" of Microsoft's documentation).
const (
	// Account is the account's name; Azurite serves it at http://HOST:PORT/devstoreaccount1.
	Account = "devstoreaccount1"
	// AccountKey is the account's shared key (base64), public by design.
	AccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is one running Azurite blob service.
type Server struct {
	// Endpoint is the account's blob endpoint, http://127.0.0.1:PORT/devstoreaccount1.
	Endpoint string
	// Account and AccountKey are the well-known development account's credentials.
	Account, AccountKey string
	// Dir is Azurite's --location: its metadata database and the blobs' extents.
	Dir string
}

// Binary finds azurite-blob: $PLINTH_AZURITE, the repository's bin/azurite-blob, or PATH.
func Binary() (string, error) {
	if p := os.Getenv("PLINTH_AZURITE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PLINTH_AZURITE: %w", err)
		}
		return p, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				p := filepath.Join(dir, "bin", "azurite-blob")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
		}
	}
	p, err := exec.LookPath("azurite-blob")
	if err != nil {
		return "", fmt.Errorf("azurite-blob not found (run `make tools-s3`, or set PLINTH_AZURITE)")
	}
	return p, nil
}

// Start runs Azurite's blob service on a free 127.0.0.1 port with a fresh directory until
// the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	s := &Server{Account: Account, AccountKey: AccountKey, Dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		addr := freeAddr(t)
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--blobHost", host, "--blobPort", port, "--location", s.Dir,
			// --skipApiVersionCheck: the Go SDK and barman's Python SDK may speak a newer REST
			// version than this Azurite knows; --disableProductStyleUrl: the account is always
			// the path's first segment (127.0.0.1 is no account.blob.host name); no telemetry
			// leaves a test machine.
			"--silent", "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		// Its own process group: the wrapper script execs node, but a shell that did not
		// would leave node running after a kill of the script alone.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start azurite-blob: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}
		// A deadline, not a measure: Node starts Azurite in ~2 s here, far longer on a
		// loaded CI machine.
		if waitListening(addr, exited, 90*time.Second) {
			t.Cleanup(stop)
			s.Endpoint = "http://" + addr + "/" + Account
			return s
		}
		stop()
		if attempt == 2 {
			t.Fatalf("azurite-blob did not start on %s:\n%s", addr, out.String())
		}
	}
}

// ConnectionString is the account's connection string, as barman-cloud and the Azure SDKs
// read it from AZURE_STORAGE_CONNECTION_STRING.
func (s *Server) ConnectionString() string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;", s.Account, s.AccountKey, s.Endpoint)
}

// Container creates a container with a name unique to the test and returns its name.
func (s *Server) Container(t testing.TB) string {
	t.Helper()
	name := ContainerName(t)
	cc, err := container.NewClientFromConnectionString(s.ConnectionString(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cc.Create(ctx, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}

// ContainerName is a valid container name unique to the test (3-63 lowercase letters,
// digits and single hyphens) that no container has yet.
func ContainerName(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(testenv.UniqueName(t, "c"))
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
			b.WriteByte('-')
		}
	}
	name = b.String()
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	return strings.Trim(name, "-")
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

// ContainerSAS signs a shared access signature (the query string, without "?") that lets
// its holder read, write, list and delete blobs in the container for an hour.
func (s *Server) ContainerSAS(t testing.TB, name string) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(s.Account, s.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	perms := sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}
	q, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, StartTime: time.Now().Add(-time.Minute).UTC(),
		ExpiryTime: time.Now().Add(time.Hour).UTC(), Permissions: perms.String(), ContainerName: name,
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return q.Encode()
}
