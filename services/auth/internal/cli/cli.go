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

	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Usage is printed for `auth users` without a valid subcommand.
const Usage = `usage: auth users <command> [username]

commands:
  add <username>            create a user (password from stdin or a prompt)
  passwd <username>         set a new password (revokes all the user's tokens)
  disable <username>        disable a user (revokes all the user's tokens)
  enable <username>         enable a user again
  list                      list users
  revoke-tokens <username>  revoke all the user's tokens
  grant-admin <username>    let the user call the admin API (plinth.auth.v1.AdminService)
  revoke-admin <username>   take admin rights back

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
	if len(rest) != 1 {
		return fmt.Errorf("usage: auth users %s <username>\n\n%s", cmd, Usage)
	}
	name := rest[0]
	switch cmd {
	case "add":
		pw, err := readPassword(io)
		if err != nil {
			return err
		}
		if _, err := svc.AddUser(ctx, name, pw, false); err != nil {
			return describe(err, name)
		}
		fmt.Fprintf(io.Out, "user %s created\n", name)
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
	case "grant-admin", "revoke-admin":
		if _, err := svc.SetAdmin(ctx, name, cmd == "grant-admin"); err != nil {
			return describe(err, name)
		}
		fmt.Fprintf(io.Out, "user %s is %s\n", name, map[bool]string{true: "an admin", false: "not an admin"}[cmd == "grant-admin"])
	default:
		return fmt.Errorf("unknown command %q\n\n%s", cmd, Usage)
	}
	return nil
}

func list(ctx context.Context, svc *identity.Service, out io.Writer) error {
	users, err := svc.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USERNAME\tID\tSTATUS\tADMIN\tCREATED")
	for _, u := range users {
		st := "enabled"
		if u.Disabled {
			st = "disabled"
		}
		admin := "no"
		if u.Admin {
			admin = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Username, u.ID, st, admin, u.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return tw.Flush()
}

func describe(err error, name string) error {
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return fmt.Errorf("no user named %q", name)
	case errors.Is(err, identity.ErrExists):
		return fmt.Errorf("a user named %q already exists (usernames are case-insensitive)", name)
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
