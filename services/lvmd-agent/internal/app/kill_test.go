package app_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/agenttest"
)

// TestKilledMidBackupTheJobEndsAndRestarts kills the agent with SIGKILL while a backup
// streams, starts it again and checks the job is not left in progress: it is failed as
// interrupted (with its event), and the same request restarts it to completion; the
// backup then restores identically.
func TestKilledMidBackupTheJobEndsAndRestarts(t *testing.T) {
	t.Parallel()
	bin := agenttest.Binary(t, "../..")
	ae := agenttest.NewEnv(t, 1, 8<<30)
	e := &env{dbURL: ae.DatabaseURL, node: ae.Node}
	b := newBucket(t, e)
	ctx := ctxT(t)
	// One part in flight, small parts: the upload takes long enough to be cut.
	slow := []string{"PLINTH_LVMD_PART_SIZE_MIB=5", "PLINTH_LVMD_UPLOAD_CONCURRENCY=1", "PLINTH_LVMD_COMPRESSION=none"}
	p := ae.Start(t, bin, slow...)
	lv := dialAgent(t, ae.Socket())
	if _, err := lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "big", SizeGb: 2}); err != nil {
		t.Fatal(err)
	}
	want := fill(t, ae.VGs[0], "big", 2<<30)
	req := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "nightly", VolumeHandle: "big",
		DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("kill/nightly", "")}}}}
	if _, err := lv.CreateBackup(ctx, req); err != nil {
		t.Fatal(err)
	}
	pool := e.pool(t)
	jobState := func() (state string, done int64, retryable bool) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT state, bytes_done, retryable FROM jobs WHERE name = 'nightly'`).Scan(&state, &done, &retryable); err != nil {
			t.Fatal(err)
		}
		return state, done, retryable
	}
	eventually(t, ctx, "the backup to make progress", func() bool {
		state, done, _ := jobState()
		if state != "in_progress" {
			t.Fatalf("the backup ended (%s) before it could be interrupted; make it slower", state)
		}
		return done > 0
	})
	p.Kill(t)
	if state, _, _ := jobState(); state != "in_progress" {
		t.Fatalf("after SIGKILL the job is %s", state)
	}

	p2 := ae.Start(t, bin, slow...)
	lv = dialAgent(t, ae.Socket())
	state, _, retryable := jobState()
	if state != "error" || !retryable {
		t.Fatalf("after the restart the job is %s (retryable %v); want a retryable error", state, retryable)
	}
	interrupted := waitJob(t, ctx, e, "nightly", eventsv1.VolumeJobState_VOLUME_JOB_STATE_ERROR)
	if interrupted.GetMessage() == "" {
		t.Fatal("the interrupted job's event says nothing")
	}
	// The same request (it carries the credentials again) restarts the job.
	if st := backupUntilDone(t, ctx, &agent{lv: lv}, req); st.GetState() != lvmdpb.StateType_COMPLETE {
		t.Fatalf("restarted backup ended %v", st)
	}
	if _, err := lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "copy", SizeGb: 2,
		DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: b.source("kill/nightly", "")}}}); err != nil {
		t.Fatal(err)
	}
	if ae.VGs[0].HashLV(t, "copy", 2<<30) != want {
		t.Fatal("the backup taken after the restart does not restore identically")
	}
	states := outboxEvents(t, pool, events.SubjectOf(&eventsv1.BackupStateChanged{}), func() *eventsv1.BackupStateChanged { return &eventsv1.BackupStateChanged{} })
	var seq []eventsv1.VolumeJobState
	for _, s := range states {
		if s.GetName() == "nightly" {
			seq = append(seq, s.GetState())
		}
	}
	wantSeq := []eventsv1.VolumeJobState{eventsv1.VolumeJobState_VOLUME_JOB_STATE_IN_PROGRESS, eventsv1.VolumeJobState_VOLUME_JOB_STATE_ERROR,
		eventsv1.VolumeJobState_VOLUME_JOB_STATE_IN_PROGRESS, eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE}
	for _, logs := range []string{p.Logs.String(), p2.Logs.String()} {
		if strings.Contains(logs, b.srv.SecretAccessKey) {
			t.Fatal("the secret access key reached the agent's log")
		}
	}
	if len(seq) != len(wantSeq) {
		t.Fatalf("job events %v, want %v", seq, wantSeq)
	}
	for i := range seq {
		if seq[i] != wantSeq[i] {
			t.Fatalf("job events %v, want %v", seq, wantSeq)
		}
	}
}

func dialAgent(t *testing.T, socket string) lvmdpb.LVServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return lvmdpb.NewLVServiceClient(conn)
}
