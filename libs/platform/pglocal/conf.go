package pglocal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	// confFile is rewritten at every start so the port and socket directory can change
	// between runs without touching the user-editable postgresql.conf.
	confFile    = "plinth.conf"
	includeLine = "include_if_exists = '" + confFile + "'"

	// maxSocketPath is the usable length of sun_path on Linux (108 bytes with the NUL).
	maxSocketPath = 107
)

// settings renders plinth.conf.
func settings(port int, socketDir string, noSync bool) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by plinth pglocal at every start; edits here are overwritten.\n")
	b.WriteString("listen_addresses = '127.0.0.1'\n")
	fmt.Fprintf(&b, "port = %d\n", port)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", quoteConf(socketDir))
	// Parallel tests and a whole suite of services each keep a pool open.
	b.WriteString("max_connections = 200\n")
	if noSync {
		// Throw-away clusters trade crash safety for speed.
		b.WriteString("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
	}
	return b.Bytes()
}

func quoteConf(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// ensureInclude makes postgresql.conf read plinth.conf, once.
func ensureInclude(dataDir string) error {
	path := filepath.Join(dataDir, "postgresql.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == includeLine {
			return nil
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	_, werr := fmt.Fprintf(f, "\n# Added by plinth pglocal: port, sockets and test settings.\n%s\n", includeLine)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("append to %s: %w", path, werr)
	}
	if cerr != nil {
		return fmt.Errorf("close %s: %w", path, cerr)
	}
	return nil
}

// socketPathFits reports whether the postmaster's socket in dir fits in sun_path.
func socketPathFits(dir string, port int) bool {
	return len(filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))) <= maxSocketPath
}
