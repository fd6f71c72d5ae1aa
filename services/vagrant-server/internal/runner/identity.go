package runner

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/oklog/ulid/v2"
)

var runnerIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidID says whether id may be a runner id: 1-64 letters, digits, '-', '_' or '.'.
func ValidID(id string) bool { return runnerIDRE.MatchString(id) }

// LoadID returns the runner's id: configured, else the one kept in stateDir/id, else a new
// ULID written there, so a restarted runner is the same runner to the server (jobs targeted at
// it by id still find it).
func LoadID(configured, stateDir string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	path := filepath.Join(stateDir, "id")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !ValidID(id) {
			return "", fmt.Errorf("runner id file %s holds %q, not an id: fix or delete it", path, id)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read runner id: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("runner state directory: %w", err)
	}
	u, err := ulid.New(ulid.Now(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate runner id: %w", err)
	}
	id := u.String()
	tmp, err := os.CreateTemp(stateDir, "id-*")
	if err != nil {
		return "", fmt.Errorf("write runner id: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		_ = tmp.Close()
		return "", fmt.Errorf("write runner id: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write runner id: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write runner id: %w", err)
	}
	return id, nil
}

// ErrNoToken: neither a token nor a token file is there. The runner keeps retrying, so a
// token written to the file later is picked up without a restart.
var ErrNoToken = errors.New("no login token")

// TokenSource returns a function that reads the login token: the configured one, else the
// content of file (read at every call).
func TokenSource(token, file string) func() (string, error) {
	return func() (string, error) {
		if token != "" {
			return token, nil
		}
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && strings.TrimSpace(string(b)) == "") {
			return "", fmt.Errorf("%w: set PLINTH_VAGRANT_TOKEN or write one to %s "+
				"(get one with the server's BootstrapToken on a new server, or GenerateLoginToken)", ErrNoToken, file)
		}
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
}
