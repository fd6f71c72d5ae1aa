package operation

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

type events []*vagrant.GetJobStreamResponse_Terminal_Event

func (e *events) Event(ev *vagrant.GetJobStreamResponse_Terminal_Event) { *e = append(*e, ev) }

func TestRawWriterSplitsLines(t *testing.T) {
	var got events
	w := newRawWriter(&got, true)
	for _, chunk := range []string{"a\nb", "c\n", "\n", strings.Repeat("x", maxLine+10), "tail"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	var data []string
	for _, ev := range got {
		if !ev.GetRaw().GetStderr() {
			t.Errorf("event %v is not marked stderr", ev)
		}
		data = append(data, string(ev.GetRaw().GetData()))
	}
	want := []string{"a\n", "bc\n", "\n", strings.Repeat("x", maxLine+10), "tail"}
	if strings.Join(data, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", data, want)
	}
}
