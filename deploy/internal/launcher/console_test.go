package launcher

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestConsolePrefixesWholeLines(t *testing.T) {
	var out bytes.Buffer
	con := NewConsole(&out, false, 5)
	w := con.Writer("auth")
	for _, chunk := range []string{"hel", "lo\nwor", "ld\r\n", "\n", "tail"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "auth  | hello\nauth  | world\nauth  | \n"; got != want {
		t.Fatalf("before close:\n%q\nwant\n%q", got, want)
	}
	_ = w.Close()
	if !strings.HasSuffix(out.String(), "auth  | tail\n") {
		t.Fatalf("Close did not flush the last line: %q", out.String())
	}
}

func TestConsoleColoursNamesOnATerminal(t *testing.T) {
	var out bytes.Buffer
	con := NewConsole(&out, true, 4)
	a, b := con.Writer("a"), con.Writer("b")
	fmt.Fprintln(a, "x")
	fmt.Fprintln(b, "y")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if lines[0] != "\x1b[36ma   \x1b[0m | x" || lines[1] != "\x1b[33mb   \x1b[0m | y" {
		t.Fatalf("lines = %q", lines)
	}
}

func TestConsoleSplitsOverlongLines(t *testing.T) {
	var out bytes.Buffer
	w := NewConsole(&out, false, 1).Writer("n")
	_, _ = w.Write(bytes.Repeat([]byte("x"), maxLine+10))
	if got := strings.Count(out.String(), "\n"); got != 1 {
		t.Fatalf("got %d lines after an overlong write, want it flushed as 1", got)
	}
}

func TestConsoleNeverInterleavesLines(t *testing.T) {
	var out bytes.Buffer
	con := NewConsole(&out, false, 3)
	var wg sync.WaitGroup
	for i := range 4 {
		w := con.Writer(fmt.Sprint("w", i))
		wg.Go(func() {
			for j := range 200 {
				fmt.Fprintf(w, "line %d of writer %d\n", j, i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("got %d lines, want 800", len(lines))
	}
	for _, l := range lines {
		var a, b, c int
		if _, err := fmt.Sscanf(l, "w%d  | line %d of writer %d", &a, &b, &c); err != nil || a != c {
			t.Fatalf("mangled line %q", l)
		}
	}
}
