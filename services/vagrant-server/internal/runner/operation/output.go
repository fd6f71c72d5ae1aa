package operation

import (
	"bytes"
	"fmt"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// maxLine bounds one output event: a process printing without newlines still streams.
const maxLine = 32 << 10

type event = vagrant.GetJobStreamResponse_Terminal_Event

// say writes a line of the runner's own narration.
func say(out Output, format string, args ...any) {
	out.Event(&event{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{
		Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: fmt.Sprintf(format, args...)},
	}})
}

// sayStyled writes a line in one of Vagrant's terminal styles ("error", "success", ...).
func sayStyled(out Output, style, format string, args ...any) {
	out.Event(&event{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{
		Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: fmt.Sprintf(format, args...), Style: style},
	}})
}

// namedValues writes name/value pairs (pairs: name, value, name, value, ...).
func namedValues(out Output, pairs ...string) {
	nv := &vagrant.GetJobStreamResponse_Terminal_Event_NamedValues{}
	for i := 0; i+1 < len(pairs); i += 2 {
		nv.Values = append(nv.Values, &vagrant.GetJobStreamResponse_Terminal_Event_NamedValue{Name: pairs[i], Value: pairs[i+1]})
	}
	out.Event(&event{Event: &vagrant.GetJobStreamResponse_Terminal_Event_NamedValues_{NamedValues: nv}})
}

// rawWriter turns a process's stdout or stderr into Raw events, one per line (the bytes as
// written, newline included), so a client writes them to its own stdout or stderr unchanged.
// Close sends a last line that lacks its newline.
type rawWriter struct {
	out    Output
	stderr bool
	buf    []byte
}

func newRawWriter(out Output, stderr bool) *rawWriter { return &rawWriter{out: out, stderr: stderr} }

// Write sends every complete line in p and keeps the rest for the next call.
func (w *rawWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.emit(len(w.buf))
			}
			return len(p), nil
		}
		w.emit(i + 1)
	}
}

// Close sends what is left.
func (w *rawWriter) Close() error {
	if len(w.buf) > 0 {
		w.emit(len(w.buf))
	}
	return nil
}

func (w *rawWriter) emit(n int) {
	data := bytes.Clone(w.buf[:n])
	w.buf = append(w.buf[:0], w.buf[n:]...)
	w.out.Event(&event{Event: &vagrant.GetJobStreamResponse_Terminal_Event_Raw_{
		Raw: &vagrant.GetJobStreamResponse_Terminal_Event_Raw{Data: data, Stderr: w.stderr},
	}})
}
