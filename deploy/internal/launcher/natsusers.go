package launcher

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
)

// NATSUsersDir is the directory inside the runtime home that holds one password file per
// NATS user of the embedded server (events.Suite: one user per service, and events.AdminUser
// for the operator's tools), each 0600, generated once and kept across runs.
const NATSUsersDir = "nats-users"

// natsUsers returns the embedded server's users with their passwords, generating the missing
// password files under home/NATSUsersDir.
func natsUsers(home string) ([]natsembed.User, error) {
	dir := filepath.Join(home, NATSUsersDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	var users []natsembed.User
	for _, a := range events.Suite() {
		pw, err := natsPassword(filepath.Join(dir, a.User))
		if err != nil {
			return nil, fmt.Errorf("the NATS password of %s: %w", a.User, err)
		}
		users = append(users, natsembed.User{Name: a.User, Password: pw, Publish: a.Publish, Subscribe: a.Subscribe})
	}
	return users, nil
}

// natsPassword reads the password in path, or writes a new random one (32 bytes, base64url)
// when the file is missing or empty. The file is left readable by the owner only.
func natsPassword(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if pw := strings.TrimRight(string(data), "\r\n"); pw != "" {
		return pw, os.Chmod(path, 0o600)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	pw := base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return "", err
	}
	return pw, os.Chmod(path, 0o600) // WriteFile keeps an existing empty file's mode
}

// natsUserEnv is what a child needs to connect to the embedded NATS as its own user: nothing
// when the run's NATS is the user's own (no users dir) or the binary uses no NATS user.
func natsUserEnv(binary, usersDir string) map[string]string {
	if usersDir == "" {
		return nil
	}
	if _, ok := events.AccessOf(binary); !ok || binary == events.AdminUser {
		return nil
	}
	return map[string]string{
		envNATSUser:     binary,
		envNATSPassword: filepath.Join(usersDir, binary),
	}
}
