package kernelvm

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes the "newc" cpio format the kernel unpacks as an initramfs: no device
// numbers or owners from the host (everything root's), so a user that is not root can make
// /dev/console.
type cpioWriter struct {
	w   *bufio.Writer
	ino uint32
	err error
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeChar = 0o020000
)

func newCPIO(w io.Writer) *cpioWriter { return &cpioWriter{w: bufio.NewWriter(w)} }

// dir adds a directory.
func (c *cpioWriter) dir(name string, perm uint32) { c.entry(name, modeDir|perm, nil, 0, 0) }

// file adds a regular file.
func (c *cpioWriter) file(name string, perm uint32, data []byte) {
	c.entry(name, modeFile|perm, data, 0, 0)
}

// charDev adds a character device node.
func (c *cpioWriter) charDev(name string, perm, major, minor uint32) {
	c.entry(name, modeChar|perm, nil, major, minor)
}

// close writes the trailer and flushes; the first error of any call is returned.
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, nil, 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// entry writes one header (13 eight-digit hex fields after the magic), the NUL-terminated
// name and the data, each padded to four bytes.
func (c *cpioWriter) entry(name string, mode uint32, data []byte, rdevMajor, rdevMinor uint32) {
	if c.err != nil {
		return
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		c.err = fmt.Errorf("kernelvm: cpio entry name %q", name)
		return
	}
	c.ino++
	nlink := uint32(1)
	if mode&modeDir != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *cpioWriter) write(p []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(p)
	}
}

func (c *cpioWriter) pad(n int) { c.write(make([]byte, align4(n)-n)) }
