package joboutput_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

type ev = vagrant.GetJobStreamResponse_Terminal_Event

func TestLines(t *testing.T) {
	cases := []struct {
		name string
		ev   *ev
		want []string
	}{
		{"line", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: "hi"}}}, []string{"hi"}},
		{"empty line", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{}}}, nil},
		{"status", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Status_{Status: &vagrant.GetJobStreamResponse_Terminal_Event_Status{Status: "running", Msg: "booting"}}}, []string{"booting"}},
		{"raw", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Raw_{Raw: &vagrant.GetJobStreamResponse_Terminal_Event_Raw{Data: []byte("a\nb\n")}}}, []string{"a", "b"}},
		{"named values", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_NamedValues_{NamedValues: &vagrant.GetJobStreamResponse_Terminal_Event_NamedValues{
			Values: []*vagrant.GetJobStreamResponse_Terminal_Event_NamedValue{{Name: "ip", Value: "10.0.0.2"}}}}}, []string{"ip: 10.0.0.2"}},
		{"table", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Table_{Table: &vagrant.GetJobStreamResponse_Terminal_Event_Table{
			Headers: []string{"name", "state"},
			Rows:    []*vagrant.GetJobStreamResponse_Terminal_Event_TableRow{{Entries: []*vagrant.GetJobStreamResponse_Terminal_Event_TableEntry{{Value: "vm"}, {Value: "up"}}}}}}},
			[]string{"name\tstate", "vm\tup"}},
		{"step", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Step_{Step: &vagrant.GetJobStreamResponse_Terminal_Event_Step{Msg: "pull", Output: []byte("layer 1\n")}}}, []string{"pull", "layer 1"}},
		{"step group", &ev{Event: &vagrant.GetJobStreamResponse_Terminal_Event_StepGroup_{StepGroup: &vagrant.GetJobStreamResponse_Terminal_Event_StepGroup{}}}, nil},
	}
	for _, c := range cases {
		if got := joboutput.Lines(c.ev); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// fakeStore records appends; fail makes the next one fail.
type fakeStore struct {
	joboutput.Store
	appends [][2]int64 // after, count
	fail    bool
}

func (f *fakeStore) AppendOutput(_ context.Context, _, _ string, _ joboutput.Scope, after int64, events []*joboutput.Event) error {
	if f.fail {
		f.fail = false
		return errors.New("database down")
	}
	f.appends = append(f.appends, [2]int64{after, int64(len(events))})
	return nil
}

func TestWriterBatchesAndRetriesWithTheSameNumbers(t *testing.T) {
	fs := &fakeStore{}
	w := joboutput.NewWriter(fs, "job", "runner", joboutput.Scope{})
	w.MaxBatch = 3
	batch := func(n int) []*ev {
		out := make([]*ev, n)
		for i := range out {
			out[i] = &ev{}
		}
		return out
	}
	if full := w.Add(batch(2)); full {
		t.Fatal("2 of 3 is not full")
	}
	if full := w.Add(batch(5)); !full {
		t.Fatal("7 of 3 is full")
	}
	if w.Pending() != 7 || w.Add(nil) != true {
		t.Fatalf("pending %d", w.Pending())
	}
	fs.fail = true
	if err := w.Flush(context.Background()); err == nil || w.Pending() != 7 {
		t.Fatalf("failed flush: %v, %d pending", err, w.Pending())
	}
	if err := w.Flush(context.Background()); err != nil || w.Pending() != 0 {
		t.Fatalf("flush: %v, %d pending", err, w.Pending())
	}
	w.Add(batch(1))
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := [][2]int64{{0, 3}, {3, 3}, {6, 1}, {7, 1}}; !slices.Equal(fs.appends, want) {
		t.Fatalf("appends %v, want %v", fs.appends, want)
	}
}
