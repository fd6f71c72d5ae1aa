package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	walpb "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// walArchivedSubject is the cnpgi-plugin's event for archived WAL (ARCHITECTURE.md).
const walArchivedSubject = "plinth.cnpgi.wal.archived"

// journeyCNPGIArchive: an operator archives a real WAL segment (initdb's first) through the
// gateway into the plugin's object store (make up's POSIX store "local", or with its dev Ceph
// the radosgw's bucket), and the plugin announces it on NATS.
func (s *journeySuite) journeyCNPGIArchive(t *testing.T) {
	s.requireService(t, "cnpgi-plugin")
	if s.pgdataErr != nil {
		skipOrFail(t, "no PostgreSQL data directory to archive from: %v", s.pgdataErr)
	}
	segment := filepath.Join(s.pgdata, "pg_wal", s.redoSegment(t))
	if fi, err := os.Stat(segment); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("initdb left no 1 MiB segment at %s: %v", segment, err)
	}
	server := "journeys-" + randomHex(t, 4)
	cluster := fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster",`+
		`"metadata":{"name":%q,"namespace":"default"},`+
		`"spec":{"instances":1,"plugins":[{"name":"cnpgi.plinth.dev","isWALArchiver":true}]}}`, server)
	start := time.Now().Add(-time.Second)
	w := walpb.NewWALClient(s.gw)
	req := &walpb.WALArchiveRequest{ClusterDefinition: cluster, SourceFileName: segment}

	_, err := w.Archive(callCtx(t), req)
	wantCode(t, "WAL Archive without a token", err, codes.Unauthenticated)

	token := s.login(t)
	if _, err := w.Archive(withToken(callCtx(t), token), req); err != nil {
		t.Fatalf("WAL Archive of %s through the gateway: %v", segment, err)
	}
	st, err := w.Status(withToken(callCtx(t), token), &walpb.WALStatusRequest{ClusterDefinition: cluster})
	if err != nil {
		t.Fatalf("WAL Status through the gateway: %v", err)
	}
	if st.GetLastWal() != filepath.Base(segment) {
		t.Errorf("WAL Status says the last archived segment is %q, want %s (%v)", st.GetLastWal(), filepath.Base(segment), st)
	}
	if dev, ok := readDevCeph(t, s.home); ok {
		// make up's dev Ceph: the plugin's default store is its radosgw's bucket plinth-cnpgi.
		found := false
		for o, err := range devS3(t, dev.S3.Endpoint, dev.S3.EnvFile, "plinth-cnpgi").List(callCtx(t), server+"/") {
			if err != nil {
				t.Fatalf("list the dev S3's bucket plinth-cnpgi: %v", err)
			}
			found = found || strings.Contains(o.Key, "/wals/0000000100000000/"+filepath.Base(segment))
		}
		if !found {
			t.Errorf("no archived object for %s in the dev S3's bucket plinth-cnpgi", server)
		}
	} else {
		stored, _ := filepath.Glob(filepath.Join(s.home, "cnpgi-store", "*", server, "wals", "0000000100000000", filepath.Base(segment)+"*"))
		if len(stored) == 0 {
			stored, _ = filepath.Glob(filepath.Join(s.home, "cnpgi-store", server, "wals", "0000000100000000", filepath.Base(segment)+"*"))
		}
		if len(stored) == 0 {
			t.Errorf("no archived object for %s under %s", server, filepath.Join(s.home, "cnpgi-store"))
		}
	}

	ev := waitWALArchived(t, s.endpoints, server, start)
	if !slices.Contains(ev.GetWalNames(), filepath.Base(segment)) || ev.GetSizeBytes() != 1<<20 || ev.GetStoredBytes() <= 0 {
		t.Errorf("event %v, want %s of 1 MiB stored", ev, filepath.Base(segment))
	}
}

// waitWALArchived reads the plugin's stream on the suite's NATS from start until an event for
// server arrives.
func waitWALArchived(t *testing.T, e endpoints, server string, start time.Time) *eventsv1.WALArchived {
	t.Helper()
	nc := connectNATS(t, e)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var found *eventsv1.WALArchived
	err = eventually(30*time.Second, 200*time.Millisecond, func() error {
		cons, err := js.OrderedConsumer(ctx, "PLINTH_CNPGI", jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{walArchivedSubject}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start,
		})
		if err != nil {
			return err
		}
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			return err
		}
		for msg := range batch.Messages() {
			if msg.Headers().Get("ce-type") != "plinth.events.v1.WALArchived" {
				t.Errorf("%s event with ce-type %q", walArchivedSubject, msg.Headers().Get("ce-type"))
				continue
			}
			ev := &eventsv1.WALArchived{}
			if err := proto.Unmarshal(msg.Data(), ev); err != nil {
				t.Fatalf("%s payload: %v", walArchivedSubject, err)
			}
			if ev.GetServerName() == server {
				found = ev
			}
		}
		if found == nil {
			return fmt.Errorf("no %s event for server %s yet", walArchivedSubject, server)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// redoSegment is the segment initdb's last checkpoint wrote to, as pg_controldata names it: a
// segment PostgreSQL really wrote (the others in pg_wal are recycled files, whose headers
// still carry their old addresses, which the plugin rightly refuses).
func (s *journeySuite) redoSegment(t *testing.T) string {
	t.Helper()
	return redoSegmentOf(t, s.pgdata)
}

// redoSegmentOf is redoSegment for any data directory.
func redoSegmentOf(t *testing.T, pgdata string) string {
	t.Helper()
	bins, err := pglocal.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bins, "pg_controldata"), pgdata).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_controldata %s: %v\n%s", pgdata, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == "Latest checkpoint's REDO WAL file" {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("pg_controldata names no REDO WAL file:\n%s", out)
	return ""
}
