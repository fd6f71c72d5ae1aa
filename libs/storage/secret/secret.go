// Package secret resolves credential references: a configuration names where a secret is
// (an environment variable of the process or a file, e.g. a mounted Kubernetes Secret),
// never the value, so that configuration files can be shared and logged.
package secret

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Ref names where a secret is: an environment variable or a file. Exactly one is set.
//
//	{env: S3_ACCESS_KEY_ID}   or   {file: /run/secrets/s3/secret}
type Ref struct {
	Env  string `yaml:"env" json:"env,omitempty"`
	File string `yaml:"file" json:"file,omitempty"`
}

// IsZero reports whether the reference names nothing.
func (r Ref) IsZero() bool { return r.Env == "" && r.File == "" }

// Env turns an os.Environ-style list into the map Resolve reads.
func Env(environ []string) map[string]string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Resolve reads the secret: the variable's value, or the file's content without trailing
// line breaks. An empty secret is an error. Errors name the reference, never the value.
func (r Ref) Resolve(env map[string]string) (string, error) {
	switch {
	case r.Env != "" && r.File != "":
		return "", errors.New("set either env or file, not both")
	case r.Env != "":
		v := env[r.Env]
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", r.Env)
		}
		return v, nil
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", r.File, errWithoutContent(err))
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s is empty", r.File)
		}
		return v, nil
	}
	return "", errors.New("missing: give {env: NAME} or {file: PATH}")
}

// errWithoutContent keeps the reason of a file error (permission, missing) without the
// path, which the caller already names.
func errWithoutContent(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
