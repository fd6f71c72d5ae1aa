package backup

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// progressStore records what the runner writes of one job (the other calls are unused here).
type progressStore struct {
	JobStore
	mu       sync.Mutex
	progress []uint64
	finished []Outcome
}

func (s *progressStore) Progress(_ context.Context, _ int64, done uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress = append(s.progress, done)
	return nil
}

func (s *progressStore) Finish(_ context.Context, id int64, o Outcome) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, o)
	return Job{ID: id, State: o.State, BytesDone: o.BytesDone}, nil
}

func (s *progressStore) sawProgress(n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.progress {
		if p == n {
			return true
		}
	}
	return false
}

// TestRunningJobRecordsItsProgress: while a job runs, the bytes it counted reach the store
// (what plinth.lvmd.v1.JobService lists), and its end records the final count.
func TestRunningJobRecordsItsProgress(t *testing.T) {
	st := &progressStore{}
	r := New(Options{Store: st, ProgressInterval: 5 * time.Millisecond})
	defer r.Close(context.Background())
	release := make(chan struct{})
	rn := r.start(Job{ID: 7, Kind: KindBackup}, Target{}, func(_ context.Context, done *atomic.Uint64) error {
		done.Store(3 << 20)
		<-release
		done.Store(8 << 20)
		return nil
	})
	deadline := time.Now().Add(30 * time.Second)
	for !st.sawProgress(3 << 20) {
		if time.Now().After(deadline) {
			t.Fatal("a running job's progress was never recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	<-rn.done
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.finished) != 1 || st.finished[0].State != Complete || st.finished[0].BytesDone != 8<<20 {
		t.Fatalf("finish recorded %+v", st.finished)
	}
	for _, p := range st.progress {
		if p > 8<<20 {
			t.Fatalf("progress beyond the bytes copied: %d", p)
		}
	}
}
