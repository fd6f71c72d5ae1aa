// Package config fills a binary's Config struct from environment variables and flags, with
// flags winning over the environment, and prints it with secrets redacted.
//
// A field takes part when it has an env and/or flag tag:
//
//	type Config struct {
//		config.Common
//		BootstrapUser string        `env:"PLINTH_AUTH_BOOTSTRAP_USER" flag:"bootstrap-user" default:"admin" usage:"first admin user"`
//		TokenTTL      time.Duration `env:"PLINTH_AUTH_TOKEN_TTL" flag:"token-ttl" default:"24h" usage:"token lifetime"`
//		SigningKey    string        `env:"PLINTH_AUTH_SIGNING_KEY" flag:"signing-key" secret:"true"`
//	}
//
// Supported field types are string, int, int64, bool, time.Duration and []string (comma
// separated). The precedence is: flag > environment > value already in the struct before Load
// > default tag. A value set in the struct before Load is how a service gives Common fields its
// own default (its port), since tags on the shared Common struct cannot differ per service.
//
// A setting that was renamed keeps its former names in a renamed tag (comma separated):
//
//	AuthAddr string `env:"PLINTH_AUTH_ADDR" renamed:"PLINTH_STATS_AUTH_ADDR" flag:"auth-addr"`
//
// Load then fails when a former name is set, naming the new one: an operator upgrading with
// the old name in a manifest learns of it at start instead of running on a default.
//
// Secret fields (secret:"true") print as "[REDACTED]"; secret:"url" prints a URL with its
// password masked, or "[REDACTED]" when the value is not a URL.
//
// The env tags are the one list of a binary's settings: WarnUnknown names the PLINTH_*
// variables of an environment that are not among them (nor IsShared), and the repository's
// deployment checks (deploy/internal/configcheck/settings) read the same tags from source.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Load fills dst, a pointer to a struct, from environ (os.Environ() form, "KEY=value") and
// args (command-line arguments without the program name). Empty environment variables count
// as unset. It returns an error wrapping flag.ErrHelp for -h/-help (print Usage(dst) then),
// and an error naming the variable or flag for any value that cannot be parsed. Load does
// not validate; call the config's Validate method before starting anything.
func Load(dst any, args, environ []string) error {
	fields, err := fieldsOf(dst)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if f.def != "" && f.v.IsZero() {
			if err := f.set(f.def); err != nil {
				return fmt.Errorf("config: field %s has a bad default tag: %w", f.path, err)
			}
		}
	}

	env := envMap(environ)
	var errs []error
	for _, f := range fields {
		for _, old := range f.renamed {
			if env[old] != "" {
				errs = append(errs, fmt.Errorf("%s was renamed %s: set %s instead (the old name is no longer read)", old, f.env, f.env))
			}
		}
		if s := env[f.env]; f.env != "" && s != "" {
			if err := f.set(s); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.env, err))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Usage(dst) prints a better help text than the flag package.
	for _, f := range fields {
		if f.flag != "" {
			fs.Var(&flagValue{f: f}, f.flag, f.usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w (run with -help to list settings)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: settings are given as flags (-name=value) or environment variables", fs.Arg(0))
	}
	return nil
}

// envMap turns "KEY=value" pairs into a map; a later duplicate wins, as in a shell.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// flagValue adapts a field to flag.Value.
type flagValue struct{ f *field }

func (v *flagValue) String() string {
	if v == nil || v.f == nil { // the flag package calls String on a zero value
		return ""
	}
	return v.f.String()
}

func (v *flagValue) Set(s string) error { return v.f.set(s) }

// IsBoolFlag lets a bool be given as "-flag" as well as "-flag=true".
func (v *flagValue) IsBoolFlag() bool { return v.f != nil && v.f.v.Kind() == reflect.Bool }

// LoadOrUsage is Load for a binary's entry point: on -h/-help it writes header (when not empty),
// a blank line and Usage(dst) to w and returns ok=false with no error, so the caller exits 0.
func LoadOrUsage(dst any, args, environ []string, w io.Writer, header string) (ok bool, err error) {
	err = Load(dst, args, environ)
	if !errors.Is(err, flag.ErrHelp) {
		return err == nil, err
	}
	if header != "" {
		fmt.Fprintf(w, "%s\n\n", header)
	}
	fmt.Fprintln(w, Usage(dst))
	return false, nil
}
