package joboutput

import (
	"strings"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Lines renders an event as the plain text lines a log shows: a line's message, a status
// message, "name: value" per named value, raw output split into lines, a table's header and
// rows (cells separated by tabs), a step's message and output. Step groups and empty
// messages show nothing.
func Lines(ev *Event) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	switch e := ev.GetEvent().(type) {
	case *vagrant.GetJobStreamResponse_Terminal_Event_Line_:
		add(e.Line.GetMsg())
	case *vagrant.GetJobStreamResponse_Terminal_Event_Status_:
		add(e.Status.GetMsg())
	case *vagrant.GetJobStreamResponse_Terminal_Event_NamedValues_:
		for _, v := range e.NamedValues.GetValues() {
			out = append(out, v.GetName()+": "+v.GetValue())
		}
	case *vagrant.GetJobStreamResponse_Terminal_Event_Raw_:
		out = append(out, split(string(e.Raw.GetData()))...)
	case *vagrant.GetJobStreamResponse_Terminal_Event_Table_:
		if h := e.Table.GetHeaders(); len(h) > 0 {
			out = append(out, strings.Join(h, "\t"))
		}
		for _, row := range e.Table.GetRows() {
			cells := make([]string, 0, len(row.GetEntries()))
			for _, c := range row.GetEntries() {
				cells = append(cells, c.GetValue())
			}
			out = append(out, strings.Join(cells, "\t"))
		}
	case *vagrant.GetJobStreamResponse_Terminal_Event_Step_:
		add(e.Step.GetMsg())
		out = append(out, split(string(e.Step.GetOutput()))...)
	}
	return out
}

// LineCount is len(Lines(ev)).
func LineCount(ev *Event) int { return len(Lines(ev)) }

// split cuts text into lines without the final newline's empty line.
func split(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
