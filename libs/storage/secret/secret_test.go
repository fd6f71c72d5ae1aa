package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s")
	if err := os.WriteFile(file, []byte("file-value\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env([]string{"A=env-value", "B=", "C=x=y"})
	cases := []struct {
		ref       Ref
		want, err string
	}{
		{Ref{Env: "A"}, "env-value", ""},
		{Ref{Env: "C"}, "x=y", ""},
		{Ref{File: file}, "file-value", ""},
		{Ref{Env: "B"}, "", "B is not set"},
		{Ref{Env: "MISSING"}, "", "MISSING is not set"},
		{Ref{File: empty}, "", "is empty"},
		{Ref{File: filepath.Join(dir, "none")}, "", "no such file"},
		{Ref{Env: "A", File: file}, "", "not both"},
		{Ref{}, "", "missing"},
	}
	for _, c := range cases {
		got, err := c.ref.Resolve(env)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: %v, want an error containing %q", c.ref, err, c.err)
			}
			if err != nil && (strings.Contains(err.Error(), "env-value") || strings.Contains(err.Error(), "file-value")) {
				t.Errorf("%+v: error shows a secret: %v", c.ref, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q %v, want %q", c.ref, got, err, c.want)
		}
	}
	if !(Ref{}).IsZero() || (Ref{Env: "A"}).IsZero() {
		t.Fatal("IsZero")
	}
}
