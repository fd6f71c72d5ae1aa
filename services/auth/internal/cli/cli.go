// Package cli is the auth binary's admin commands (`auth users ...`): they work directly against
// the database through the same identity rules the gRPC service uses.
package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Usage is printed for `auth users` without a valid subcommand.
const Usage = `usage: auth users <command> [username]

commands:
  add <username> [--role R] create a user (password from stdin or a prompt); role viewer,
                            operator (the default) or admin
  create <username> [--role R]  the same as add
  set-role <username> <role>  give the user another role (revokes all the user's tokens)
  passwd <username>         set a new password (revokes all the user's tokens)
  disable <username>        disable a user (revokes all the user's tokens)
  enable <username>         enable a user again
  list                      list users
  revoke-tokens <username>  revoke all the user's tokens
  grant-admin <username>    set-role <username> admin
  revoke-admin <username>   set-role <username> operator
  unlock <username>         clear the login throttles of the username from every address
  unlock-address <address>  clear the login throttles of a client address (any username)

Passwords are never taken from the command line: they are read from standard input (first
line) or, on a terminal, prompted for twice without echo.`

// IO is where commands read passwords and write results.
type IO struct {
	In  *os.File
	Out io.Writer
	Err io.Writer
}

// RunUsers executes `auth users <args...>`.
func RunUsers(ctx context.Context, svc *identity.Service, args []string, io IO) error {
	if len(args) == 0 {
		return errors.New(Usage)
	}
	cmd, rest := args[0], args[1:]
	if cmd == "list" {
		if len(rest) != 0 {
			return errors.New("usage: auth users list")
		}
		return list(ctx, svc, io.Out)
	}
	switch cmd {
	case "add", "create":
		return create(ctx, svc, cmd, rest, io)
	case "set-role":
		if len(rest) != 2 {
			return fmt.Errorf("usage: auth users set-role <username> <role>\n\n%s", Usage)
		}
		return setRole(ctx, svc, rest[0], rest[1], io.Out)
	}
	if len(rest) != 1 {
		return fmt.Errorf("usage: auth users %s <username>\n\n%s", cmd, Usage)
	}
	name := rest[0]
	switch cmd {
	case "passwd":
		pw, err := readPassword(io)
		if err != nil {
			return err
		}
		if err := svc.ChangePassword(ctx, name, pw); err != nil {
			return describe(err, name)
		}
		fmt.Fprintf(io.Out, "password of %s changed; its tokens are revoked\n", name)
	case "disable", "enable":
		if _, err := svc.SetDisabled(ctx, name, cmd == "disable"); err != nil {
			return describe(err, name)
		}
		fmt.Fprintf(io.Out, "user %s %sd\n", name, cmd)
	case "revoke-tokens":
		n, err := svc.RevokeTokens(ctx, name)
		if err != nil {
			return describe(err, name)
		}
		fmt.Fprintf(io.Out, "revoked %d token(s) of %s\n", n, name)
	case "grant-admin":
		return setRole(ctx, svc, name, string(authz.Admin), io.Out)
	case "revoke-admin":
		return setRole(ctx, svc, name, string(authz.Operator), io.Out)
	case "unlock":
		n, err := svc.UnlockUser(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "cleared %d login throttle(s) of %s\n", n, name)
	case "unlock-address":
		n, err := svc.UnlockAddress(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "cleared %d login throttle(s) of address %s\n", n, name)
	default:
		return fmt.Errorf("unknown command %q\n\n%s", cmd, Usage)
	}
	return nil
}

// create is `auth users add|create <username> [--role R]` (the flag before or after the name,
// also as --role=R).
func create(ctx context.Context, svc *identity.Service, cmd string, args []string, io IO) error {
	usage := fmt.Errorf("usage: auth users %s <username> [--role viewer|operator|admin]\n\n%s", cmd, Usage)
	var name, role string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--role" || a == "-role":
			if i+1 == len(args) {
				return usage
			}
			i++
			role = args[i]
		case strings.HasPrefix(a, "--role=") || strings.HasPrefix(a, "-role="):
			_, role, _ = strings.Cut(a, "=")
		case strings.HasPrefix(a, "-") || name != "":
			return usage
		default:
			name = a
		}
	}
	if name == "" {
		return usage
	}
	r, err := identity.NewUserRole(false, role)
	if err != nil {
		return err
	}
	pw, err := readPassword(io)
	if err != nil {
		return err
	}
	u, err := svc.AddUser(ctx, name, pw, r)
	if err != nil {
		return describe(err, name)
	}
	fmt.Fprintf(io.Out, "user %s created (role %s)\n", u.Username, u.Role)
	return nil
}

func setRole(ctx context.Context, svc *identity.Service, name, role string, out io.Writer) error {
	u, err := svc.SetRole(ctx, name, role)
	if err != nil {
		return describe(err, name)
	}
	fmt.Fprintf(out, "user %s is now %s; tokens issued before the change are revoked\n", u.Username, u.Role)
	return nil
}

func list(ctx context.Context, svc *identity.Service, out io.Writer) error {
	users, err := svc.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USERNAME\tID\tSTATUS\tROLE\tCREATED")
	for _, u := range users {
		st := "enabled"
		if u.Disabled {
			st = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Username, u.ID, st, u.Role, u.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return tw.Flush()
}

func describe(err error, name string) error {
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return fmt.Errorf("no user named %q", name)
	case errors.Is(err, identity.ErrExists):
		return fmt.Errorf("a user named %q already exists (usernames are case-insensitive)", name)
	case errors.Is(err, identity.ErrLastAdmin):
		return fmt.Errorf("%s is the last enabled admin and keeps the role: make another user an admin first", name)
	}
	return err
}

// readPassword prompts twice without echo on a terminal, else reads stdin's first line.
func readPassword(io IO) (string, error) {
	fd := int(io.In.Fd())
	if term.IsTerminal(fd) {
		fmt.Fprint(io.Err, "Password: ")
		a, err := term.ReadPassword(fd)
		fmt.Fprintln(io.Err)
		if err != nil {
			return "", err
		}
		fmt.Fprint(io.Err, "Repeat password: ")
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(io.Err)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the passwords do not match")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.In).ReadString('\n')
	if err != nil && !errors.Is(err, os.ErrClosed) && line == "" {
		return "", errors.New("no password on standard input")
	}
	return strings.TrimRight(line, "\r\n"), nil
}
