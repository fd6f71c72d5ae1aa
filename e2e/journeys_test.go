package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// journeySuite is one `make up` shared by every user journey: starting the suite is the
// expensive part (a build and seven processes on a 2-core machine), the journeys are cheap.
type journeySuite struct {
	home      string
	endpoints endpoints
	// password is the first admin's: auth creates user admin with PLINTH_ADMIN_PASSWORD on an
	// empty database (otherwise it prints a generated one once on stdout).
	password string
	// accountID is the admin's account id, as Login answered it.
	accountID string
	// gw is a gRPC connection to the gateway; every journey goes through it.
	gw *grpc.ClientConn
	// pgdata is a real PostgreSQL data directory (initdb) whose WAL the cnpgi-plugin may
	// archive (PLINTH_CNPGI_PGDATA); pgdataErr says why there is none.
	pgdata    string
	pgdataErr error
}

// TestJourneys runs the user journeys of issue #13 through the gateway, on one suite.
func TestJourneys(t *testing.T) {
	t.Parallel()
	s := startJourneySuite(t)
	t.Run("LoginAndEveryService", s.journeyLogin)
	t.Run("BrowserProtocols", s.journeyBrowser)
	t.Run("KoorDashboard", s.journeyKoor)
	t.Run("VagrantJob", s.journeyVagrantJob)
	t.Run("CNPGIArchive", s.journeyCNPGIArchive)
	t.Run("LvmdCapacityInStats", s.journeyLvmdCapacity)
	t.Run("KaasClusterMachines", s.journeyKaasCluster)
	t.Run("ViewerAndOperator", s.journeyRoles)
	t.Run("LoginLockout", s.journeyLockout)
	t.Run("LockoutPerBrowserAddress", s.journeyLockoutPerAddress)
	t.Run("LogoutRevokesEverywhere", s.journeyLogout)
}

// startJourneySuite builds and starts the launcher as `make up` does, with a database, a first
// admin password, a PostgreSQL data directory for the cnpgi-plugin and (as root) a volume
// group of its own, and connects to the gateway.
func startJourneySuite(t *testing.T) *journeySuite {
	t.Helper()
	root := repoRoot(t)
	bin := buildLauncher(t, root)
	home := newHome(t)
	s := &journeySuite{home: home, password: randomHex(t, 12)}
	dbName := "plinth_e2e_journeys_" + randomHex(t, 4)
	env := []string{
		"PLINTH_DATABASE_NAME=" + dbName,
		"PLINTH_ADMIN_PASSWORD=" + s.password,
		// Announce archived WAL within half a second instead of ten: the journey waits for it.
		"PLINTH_CNPGI_WAL_EVENT_INTERVAL=500ms",
	}
	s.pgdata, s.pgdataErr = initPGData(t, filepath.Join(home, "pgdata"))
	if s.pgdataErr == nil {
		env = append(env, "PLINTH_CNPGI_PGDATA="+s.pgdata)
	}
	// The launcher makes lvmd-agent's loop-backed volume group (as root with lvm2) under a
	// name of the suite's own, removed after the launcher stopped.
	env = append(env, ownDevVG(t, home))

	l := startLauncher(t, bin, root, home, freeOffset(t, bandJourneys), env...)
	s.endpoints = l.waitEndpoints(t, readyTimeout)
	t.Cleanup(func() {
		l.interrupt(t, stopTimeout)
		dropDatabase(t, s.endpoints.Database, dbName)
	})
	if s.endpoints.Gateway == "" {
		skipOrFail(t, "the launcher reports no gateway in endpoints.json (services/gateway/cmd/gateway not landed?)")
	}
	conn, err := grpc.NewClient(s.endpoints.Gateway, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway %s: %v", s.endpoints.Gateway, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	s.gw = conn
	return s
}

// service returns the endpoint of a running binary, if it runs.
func (s *journeySuite) service(name string) (grpcAddr, admin string, ok bool) {
	for _, e := range s.endpoints.Services {
		if e.Name == name {
			return e.GRPC, e.Admin, true
		}
	}
	return "", "", false
}

// requireService fails (or skips, outside strict mode) a journey whose service is not running.
func (s *journeySuite) requireService(t *testing.T, name string) {
	t.Helper()
	if _, _, ok := s.service(name); !ok {
		skipOrFail(t, "%s is not running in this suite", name)
	}
}

// initPGData makes a real PostgreSQL data directory with 1 MiB WAL segments (initdb runs as
// the postgres user when the tests run as root, as the launcher's private cluster does).
func initPGData(t *testing.T, dir string) (string, error) {
	t.Helper()
	bins, err := pglocal.FindBinaries()
	if err != nil {
		return "", err
	}
	path := filepath.Join(bins, "initdb")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	args := []string{path, "-D", dir, "-N", "-A", "trust", "-U", "postgres", "--wal-segsize=1"}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
			return "", fmt.Errorf("chown %s to postgres: %v: %s", dir, err, out)
		}
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	return dir, nil
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// eventually calls f until it returns nil or timeout passes, and returns its last error.
func eventually(timeout, every time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		var stop retryStop
		if err == nil || errors.As(err, &stop) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(every)
	}
}
