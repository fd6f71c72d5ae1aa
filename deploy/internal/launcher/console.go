package launcher

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Console interleaves the output of many processes on one writer, one whole line at a time,
// each prefixed with the name of the process that wrote it (coloured on a terminal).
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	width int
	next  int // next colour index
}

// palette holds ANSI foreground colours that read well on dark and light terminals.
func palette() []int { return []int{36, 33, 32, 35, 34, 91, 96, 93, 92, 95} }

// NewConsole writes to w; width is the column the names are padded to.
func NewConsole(w io.Writer, color bool, width int) *Console {
	return &Console{w: w, color: color, width: width}
}

// Writer returns a writer whose complete lines appear on the console as "name | line".
// Close it to flush a last line without a newline.
func (c *Console) Writer(name string) io.WriteCloser {
	c.mu.Lock()
	defer c.mu.Unlock()
	colors := palette()
	code := colors[c.next%len(colors)]
	c.next++
	prefix := fmt.Sprintf("%-*s | ", c.width, name)
	if c.color {
		prefix = fmt.Sprintf("\x1b[%dm%-*s\x1b[0m | ", code, c.width, name)
	}
	return &lineWriter{console: c, prefix: []byte(prefix)}
}

func (c *Console) writeLine(prefix, line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Errors writing to our own stdout cannot be reported anywhere more useful.
	_, _ = c.w.Write(append(append(append([]byte{}, prefix...), line...), '\n'))
}

// maxLine bounds the bytes buffered for a line without a newline, so a process writing
// binary garbage cannot grow the launcher's memory without end.
const maxLine = 64 << 10

type lineWriter struct {
	console *Console
	prefix  []byte
	mu      sync.Mutex // stdout and stderr of one process share the writer
	buf     []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.console.writeLine(l.prefix, bytes.TrimSuffix(l.buf[:i], []byte{'\r'}))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) >= maxLine {
		l.console.writeLine(l.prefix, l.buf)
		l.buf = nil
	}
	// Keep the unread tail in a fresh array so the consumed prefix can be collected.
	l.buf = append([]byte(nil), l.buf...)
	return len(p), nil
}

// Close flushes a final unterminated line.
func (l *lineWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.console.writeLine(l.prefix, l.buf)
		l.buf = nil
	}
	return nil
}
