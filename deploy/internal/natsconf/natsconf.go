// Package natsconf renders the NATS server authorization of the compose and Kubernetes ways to
// run from the suite's permission table (events.Suite), so that every way to run grants the
// same subjects to the same users as `make up`'s embedded server.
package natsconf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Files are the generated files, by path from the repository root.
var Files = map[string]string{
	"deploy/docker/nats/plinth.conf":    composeHeader,
	"deploy/k8s/nats/plinth-users.conf": k8sHeader,
}

// PasswordsFile is the file, beside the generated one, that defines each user's password
// variable (PasswordVar); it is never committed.
const PasswordsFile = "passwords.conf"

const common = `# Generated from events.Suite (libs/platform/events/access.go) by
# "make generate-deploy": do not edit; deploy/internal/natsconf's test
# fails when it is stale. Every client needs a user (one per service, and admin for
# operators); a user publishes and subscribes only where its permissions allow, so only auth
# may publish plinth.auth.>. Each password is a variable defined in passwords.conf beside this
# file: PLINTH_NATS_PASSWORD_<USER>: "<password>", one line per user.
`

const composeHeader = common + `#
# docker-compose.yaml's nats service writes passwords.conf at every start from the password
# files it generates once in the nats-<user> volumes (each service mounts only its own).
`

const k8sHeader = common + `#
# For the NATS server Plinth's Deployments connect to: include this file and a passwords.conf
# with the passwords of the Secret plinth-nats (deploy/k8s/README.md).
`

// PasswordVar is the configuration variable that holds user's password.
func PasswordVar(user string) string {
	return "PLINTH_NATS_PASSWORD_" + strings.ToUpper(strings.ReplaceAll(user, "-", "_"))
}

// Render returns the configuration for the file at path (a key of Files).
func Render(path string) (string, error) {
	header, ok := Files[path]
	if !ok {
		return "", fmt.Errorf("natsconf: no generated file %s", path)
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\ninclude \"" + PasswordsFile + "\"\n\nauthorization {\n  users = [\n")
	for _, a := range events.Suite() {
		fmt.Fprintf(&b, "    {\n      user: %s\n      password: $%s\n      permissions: {\n", strconv.Quote(a.User), PasswordVar(a.User))
		fmt.Fprintf(&b, "        publish: {allow: %s}\n", list(a.Publish))
		fmt.Fprintf(&b, "        subscribe: {allow: %s}\n", list(a.Subscribe))
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

// RenderAll returns every generated file by path from the repository root.
func RenderAll() (map[string][]byte, error) {
	out := make(map[string][]byte, len(Files))
	for path := range Files {
		text, err := Render(path)
		if err != nil {
			return nil, err
		}
		out[path] = []byte(text)
	}
	return out, nil
}

// list renders subjects as a quoted NATS configuration array, one per line when long.
func list(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	if len(subjects) <= 2 {
		return "[" + strings.Join(q, ", ") + "]"
	}
	return "[\n          " + strings.Join(q, "\n          ") + "\n        ]"
}
