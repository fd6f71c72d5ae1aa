// Package joboutputtest is the conformance suite every job output store (joboutput.Store)
// must pass, after Waypoint's statetest: a job's events in order, numbers taken once, log
// backlogs and followers by scope — each behaviour run twice, once on one store and once
// reopening it mid-test, so that nothing a behaviour relies on lives only in a process.
package joboutputtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

// Store is what the suite tests: the output store, and a way to make the jobs output
// belongs to (a store may require the job to exist).
type Store interface {
	joboutput.Store
	// NewJob makes a job and returns its id.
	NewJob(t *testing.T) string
}

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) Store

// Reopen returns a fresh store on the same data as s, as a restarted (or another) replica
// would have.
type Reopen = func(t *testing.T, s Store) Store

// StoreTest is one behaviour's run against one store.
type StoreTest = testenv.StoreRun[Store]

type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, append(outputBehaviours(), logBehaviours()...), factory, reopen)
}

// lines are line events with msgs, stamped at: the zero time leaves the stamp to the store.
func lines(at time.Time, msgs ...string) []*joboutput.Event {
	out := make([]*joboutput.Event, len(msgs))
	for i, m := range msgs {
		out[i] = &joboutput.Event{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: m}}}
		if !at.IsZero() {
			out[i].Timestamp = timestamppb.New(at)
		}
	}
	return out
}

// jobs names job ids in what texts reports.
type jobs map[string]string

// texts renders entries as "<job name>#<seq> <line>".
func (n jobs) texts(es []joboutput.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s#%d %s", n[e.JobID], e.Seq, e.Event.GetLine().GetMsg()))
	}
	return out
}

// want fails the test when got is not want.
func want(st *StoreTest, what string, got, want []string) {
	st.T.Helper()
	if !slices.Equal(got, want) {
		st.T.Fatalf("%s: %q, want %q", what, got, want)
	}
}

// appendOK stores events after..after+len-1 of job by runner r1.
func appendOK(st *StoreTest, job string, scope joboutput.Scope, after int64, events []*joboutput.Event) {
	st.T.Helper()
	testenv.OK(st.T, st.Store.AppendOutput(st.Ctx, job, "r1", scope, after, events))
}

// must2 is testenv.Must for the calls that return two values and an error.
func must2[A, B any](a A, b B, err error) func(t *testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}
