package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

func TestJobsPageNewestFirstPerNode(t *testing.T) {
	t.Parallel()
	st, _ := open(t)()
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		j, _, err := st.Claim(ctx, backup.Job{Node: "n1", Kind: backup.KindBackup, Name: fmt.Sprintf("b%d", i), VolumeHandle: "v",
			DeviceClass: "ssd", Location: "http://s3/b/p", SizeBytes: 100, Owner: "a"}, false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	other, _, err := st.Claim(ctx, backup.Job{Node: "n2", Kind: backup.KindRestore, Name: "r", VolumeHandle: "r", DeviceClass: "ssd",
		Location: "x", Owner: "a"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Progress(ctx, ids[1], 40); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Finish(ctx, ids[0], backup.Outcome{State: backup.Complete, BytesDone: 100}); err != nil {
		t.Fatal(err)
	}

	var got []backup.Job
	var after *backup.JobCursor
	for {
		page, err := st.JobsPage(ctx, "n1", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		last := page[len(page)-1]
		after = &backup.JobCursor{StartedAt: last.StartedAt, ID: last.ID}
	}
	if len(got) != 5 {
		t.Fatalf("want the 5 jobs of n1, got %d", len(got))
	}
	for i, j := range got {
		if j.ID != ids[4-i] {
			t.Fatalf("not newest first: position %d is %d, want %d", i, j.ID, ids[4-i])
		}
	}
	if got[3].BytesDone != 40 || got[3].State != backup.InProgress || !got[3].FinishedAt.IsZero() {
		t.Fatalf("progress of a running job: %+v", got[3])
	}
	if got[4].State != backup.Complete || got[4].BytesDone != 100 || got[4].FinishedAt.IsZero() || got[4].StartedAt.IsZero() {
		t.Fatalf("finished job: %+v", got[4])
	}

	if j, err := st.JobByID(ctx, "n1", ids[2]); err != nil || j.Name != "b2" {
		t.Fatalf("JobByID: %+v %v", j, err)
	}
	if _, err := st.JobByID(ctx, "n1", other.ID); !errors.Is(err, backup.ErrJobNotFound) {
		t.Fatalf("another node's job must not be found: %v", err)
	}
	// A restarted job starts again: it is the newest.
	if _, err := st.Finish(ctx, ids[1], backup.Outcome{State: backup.Failed, Message: "x", Retryable: true}); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := st.Claim(ctx, backup.Job{Node: "n1", Kind: backup.KindBackup, Name: "b1", VolumeHandle: "v",
		DeviceClass: "ssd", Location: "http://s3/b/p", SizeBytes: 100, Owner: "b"}, false); err != nil || !claimed {
		t.Fatalf("restart: %v %v", claimed, err)
	}
	if page, _ := st.JobsPage(ctx, "n1", nil, 1); len(page) != 1 || page[0].ID != ids[1] || page[0].Attempts != 2 {
		t.Fatalf("the restarted job must come first: %+v", page)
	}
}
