package events

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// TestBoundCutsFreeText: a job error repeating a 1 MB command becomes a small event that
// says how much was cut; short events are written unchanged.
func TestBoundCutsFreeText(t *testing.T) {
	huge := &eventsv1.JobStateChanged{JobId: "01J", ErrorMessage: "exec: " + strings.Repeat("x", 1<<20)}
	payload, err := bound(huge)
	if err != nil {
		t.Fatal(err)
	}
	if len(payload) > MaxFieldLen+256 {
		t.Fatalf("bounded payload is %d bytes", len(payload))
	}
	var got eventsv1.JobStateChanged
	if err := proto.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetJobId() != "01J" || !strings.HasSuffix(got.GetErrorMessage(), "…[truncated 1048582 bytes]") {
		t.Errorf("bounded event: id %q, message ends %q", got.GetJobId(), got.GetErrorMessage()[len(got.GetErrorMessage())-40:])
	}
	if len(huge.GetErrorMessage()) != 1<<20+6 {
		t.Error("bound modified the caller's message")
	}

	small := &eventsv1.RunnerStateChanged{RunnerId: "r1", Components: []string{"COMMAND"}}
	want, _ := proto.Marshal(small)
	if got, err := bound(small); err != nil || string(got) != string(want) {
		t.Errorf("a small event changed: %v", err)
	}
}

// TestBoundManyLongFields: many fields each under the field limit but together over the
// payload limit are cut shorter.
func TestBoundManyLongFields(t *testing.T) {
	m := &eventsv1.RunnerStateChanged{RunnerId: "r1"}
	for range 100 {
		m.Components = append(m.Components, strings.Repeat("c", MaxFieldLen-1))
	}
	payload, err := bound(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(payload) > MaxPayload {
		t.Fatalf("payload %d bytes", len(payload))
	}
}

func FuzzBound(f *testing.F) {
	f.Add("r1", strings.Repeat("x", 9000), 3)
	f.Add("", "", 0)
	f.Fuzz(func(t *testing.T, id, text string, n int) {
		m := &eventsv1.JobStateChanged{JobId: id, ErrorMessage: text, Operation: text}
		payload, err := bound(m)
		if err != nil {
			return
		}
		if len(payload) > MaxPayload {
			t.Fatalf("payload %d bytes", len(payload))
		}
	})
}
