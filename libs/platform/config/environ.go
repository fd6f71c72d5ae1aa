package config

// Environ returns cfg's settings that are not zero as "KEY=value" pairs for a child process's
// environment, in declaration order, formatted as Load reads them back. A program that starts
// a binary (a launcher, a pod spec builder) fills the binary's own Config type, or the part
// of it that it sets, so that the names come from the binary's env tags rather than from
// strings spelt again beside it. Flag-only fields are skipped; a cfg Load cannot read yields
// nil. Secret fields are written as they are: the result is a child's environment, never a
// log line (LogValue is that).
func Environ(cfg any) []string {
	return each(cfg, func(f *field) (string, bool) {
		if f.env == "" || f.v.IsZero() {
			return "", false
		}
		return f.env + "=" + f.String(), true
	})
}

// Args is Environ as command-line flags ("-name=value"), for fields with a flag tag.
func Args(cfg any) []string {
	return each(cfg, func(f *field) (string, bool) {
		if f.flag == "" || f.v.IsZero() {
			return "", false
		}
		return "-" + f.flag + "=" + f.String(), true
	})
}

// Names returns the env names of cfg's settings in declaration order (flag-only fields
// have none), for checks that hold a Config against where its settings are documented or
// set; a cfg Load cannot read yields nil.
func Names(cfg any) []string {
	return each(cfg, func(f *field) (string, bool) { return f.env, f.env != "" })
}

// each returns, in declaration order, what item makes of each of cfg's fields it keeps (ok);
// nil for a cfg Load cannot read.
func each(cfg any, item func(f *field) (s string, ok bool)) []string {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		if s, ok := item(f); ok {
			out = append(out, s)
		}
	}
	return out
}
