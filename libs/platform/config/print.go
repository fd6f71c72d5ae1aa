package config

import (
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/plinth-dev/plinth/libs/platform/telemetry/redact"
)

// display is the field's value safe for logs: secrets are redacted and credentials embedded
// in any other value (a URL someone put in a non-secret field) are masked.
func (f *field) display() string {
	s := f.String()
	switch f.secret {
	case "true":
		if s == "" {
			return "" // "unset" is useful to see and reveals nothing
		}
		return redact.Placeholder
	case "url":
		return redact.URL(s)
	default:
		return redact.Text(s)
	}
}

// key is the name a setting is printed under: its env name, else its flag.
func (f *field) key() string {
	if f.env != "" {
		return f.env
	}
	return f.flag
}

// LogValue returns cfg's settings as a slog group keyed by env name (flag name for flag-only
// settings), with secrets redacted: logger.Info("starting", "config", config.LogValue(&cfg)).
// A cfg that is not a pointer to a struct yields a value describing the mistake.
func LogValue(cfg any) slog.Value {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return slog.StringValue(err.Error())
	}
	attrs := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		attrs = append(attrs, slog.String(f.key(), f.display()))
	}
	return slog.GroupValue(attrs...)
}

// String returns cfg's settings one "NAME=value" per line with secrets redacted, for printing
// the effective configuration (e.g. a -print-config flag or a startup banner).
func String(cfg any) string {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&b, "%s=%s\n", f.key(), f.display())
	}
	return b.String()
}

// Usage returns a help text listing every setting of cfg: flag, env variable, usage and the
// value cfg holds now (redacted if secret). After Load returned flag.ErrHelp that is the
// default overridden by the environment, which is what the binary would run with.
func Usage(cfg any) string {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	b.WriteString("Settings (flags win over environment variables):\n")
	w := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, f := range fields {
		flg, env := "", f.env
		if f.flag != "" {
			flg = "-" + f.flag
		}
		val := f.display()
		if val != "" {
			val = "(value: " + val + ")"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s %s\n", flg, env, f.usage, val)
	}
	_ = w.Flush() // writes to a strings.Builder cannot fail
	return b.String()
}
