package kernelvm

import (
	"bytes"
	"strings"
	"time"
)

// consoleTailLines is how much of the console an error quotes.
const consoleTailLines = 40

// console receives QEMU's standard output, the guest's serial console: it hands each line to
// log as it comes, notes when the command starts, and keeps the last lines for errors. Only
// exec's copying goroutine writes it; Wait orders that before the reads of boot and tail.
type console struct {
	log     func(string)
	start   time.Time
	boot    time.Duration
	partial []byte
	last    []string
}

func (c *console) Write(p []byte) (int, error) {
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.line(string(c.partial[:i]))
		c.partial = c.partial[i+1:]
	}
	return len(p), nil
}

// flush hands on a last line without its newline.
func (c *console) flush() {
	if len(c.partial) > 0 {
		c.line(string(c.partial))
		c.partial = nil
	}
}

func (c *console) line(s string) {
	s = strings.TrimRight(s, "\r") // the guest's tty writes \r\n
	if s == startMarker && c.boot == 0 {
		c.boot = time.Since(c.start)
	}
	if len(c.last) == consoleTailLines {
		c.last = c.last[1:]
	}
	c.last = append(c.last, s)
	if c.log != nil {
		c.log(s)
	}
}

// tail is the console's last lines.
func (c *console) tail() string { return strings.Join(c.last, "\n") }
