package config

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testConfig mirrors how a service declares its Config: Common embedded plus its own fields.
type testConfig struct {
	Common
	Name     string        `env:"T_NAME" flag:"name" default:"svc" usage:"service name"`
	Workers  int           `env:"T_WORKERS" flag:"workers" default:"4"`
	Verbose  bool          `env:"T_VERBOSE" flag:"verbose"`
	Interval time.Duration `env:"T_INTERVAL" flag:"interval" default:"1m"`
	Peers    []string      `env:"T_PEERS" flag:"peers"`
	APIToken string        `env:"T_API_TOKEN" flag:"api-token" secret:"true"`
	FlagOnly string        `flag:"flag-only"`
	Nested   struct {
		Depth int `env:"T_DEPTH"`
	}
	internal string //nolint:unused // unexported fields must be ignored
}

func TestLoadParsesEveryType(t *testing.T) {
	var c testConfig
	err := Load(&c, []string{"-verbose", "-peers", "a, b,,c", "-flag-only=x"}, []string{
		"T_WORKERS=12", "T_INTERVAL=90s", "T_API_TOKEN=tok", "T_DEPTH=3",
		"PLINTH_SHUTDOWN_TIMEOUT=2s", "PLINTH_GRPC_ADDR=unix:///run/x.sock",
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := testConfig{
		Common: Common{
			Telemetry: Telemetry{LogFormat: "auto", LogLevel: "info"},
			Admin:     Admin{ShutdownTimeout: 2 * time.Second},
			GRPC:      GRPC{GRPCAddr: "unix:///run/x.sock"},
			// The default tags spell the exported defaults.
			ClientLimits: ClientLimits{MaxConnsPerClient: DefaultMaxConnsPerClient, MaxCallsPerClient: DefaultMaxCallsPerClient},
		},
		Name: "svc", Workers: 12, Verbose: true, Interval: 90 * time.Second,
		Peers: []string{"a", "b", "c"}, APIToken: "tok", FlagOnly: "x",
	}
	want.Nested.Depth = 3
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", c, want)
	}
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		preset  string
		environ []string
		args    []string
		want    string
	}{
		{"default tag", "", nil, nil, "svc"},
		{"preset beats default tag", "preset", nil, nil, "preset"},
		{"env beats preset", "preset", []string{"T_NAME=env"}, nil, "env"},
		{"empty env counts as unset", "preset", []string{"T_NAME="}, nil, "preset"},
		{"last duplicate env wins", "", []string{"T_NAME=one", "T_NAME=two"}, nil, "two"},
		{"flag beats env", "preset", []string{"T_NAME=env"}, []string{"-name=flag"}, "flag"},
		{"double-dash flag", "", nil, []string{"--name", "flag"}, "flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig{Name: tt.preset}
			if err := Load(&c, tt.args, tt.environ); err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Name != tt.want {
				t.Errorf("Name = %q, want %q", c.Name, tt.want)
			}
		})
	}
}

func TestLoadErrorsNameTheSetting(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		args    []string
		want    []string
	}{
		{"bad env duration", []string{"PLINTH_SHUTDOWN_TIMEOUT=soon"}, nil,
			[]string{"PLINTH_SHUTDOWN_TIMEOUT", `invalid duration "soon"`}},
		{"all env errors at once", []string{"T_WORKERS=many", "T_VERBOSE=maybe"}, nil,
			[]string{`T_WORKERS: invalid integer "many"`, `T_VERBOSE: invalid boolean "maybe"`}},
		{"bad flag", nil, []string{"-interval=x"}, []string{"-interval", `invalid duration "x"`}},
		{"unknown flag", nil, []string{"-nope"}, []string{"-nope", "-help"}},
		{"positional argument", nil, []string{"extra"}, []string{`unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c testConfig
			err := Load(&c, tt.args, tt.environ)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	var c testConfig
	err := Load(&c, []string{"-help"}, []string{"T_API_TOKEN=hunter2"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Load(-help) = %v, want flag.ErrHelp", err)
	}
	u := Usage(&c)
	for _, w := range []string{"-grpc-addr", "PLINTH_GRPC_ADDR", "-workers", "(value: 4)", "T_API_TOKEN", "[REDACTED]"} {
		if !strings.Contains(u, w) {
			t.Errorf("usage does not contain %q:\n%s", w, u)
		}
	}
	if strings.Contains(u, "hunter2") {
		t.Errorf("usage leaks a secret:\n%s", u)
	}
}

func TestLoadRejectsBadDeclarations(t *testing.T) {
	tests := []struct {
		name string
		dst  any
		want string
	}{
		{"not a pointer", testConfig{}, "non-nil pointer to a struct"},
		{"unsupported type", &struct {
			F float64 `env:"F"`
		}{}, "F has type float64"},
		{"duplicate env", &struct {
			A string `env:"X"`
			B string `env:"X"`
		}{}, "A and B both use env X"},
		{"duplicate flag", &struct {
			A string `flag:"x"`
			B string `flag:"x"`
		}{}, "A and B both use flag -x"},
		{"bad secret tag", &struct {
			A string `env:"A" secret:"yes"`
		}{}, `secret tag must be "true" or "url"`},
		{"bad default tag", &struct {
			A int `env:"A" default:"ten"`
		}{}, "A has a bad default tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Load(tt.dst, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

// TestCommonTagsMatchConstants keeps the exported names and the struct tags in step.
func TestCommonTagsMatchConstants(t *testing.T) {
	fields, err := fieldsOf(&Common{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.env)
	}
	want := []string{EnvGRPCAddr, EnvLogCalls, EnvMaxConnsPerClient, EnvMaxCallsPerClient, EnvAdminAddr, EnvShutdownTimeout, EnvDatabaseURL, EnvNATSURL, EnvNATSUser, EnvNATSPassword,
		EnvLogFormat, EnvLogLevel, EnvOTLPEndpoint}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Common env tags = %v, want %v", got, want)
	}
}

func TestLoadOrUsage(t *testing.T) {
	var cfg struct {
		Name string `env:"X_NAME" flag:"name" usage:"the name"`
	}
	var out strings.Builder
	ok, err := LoadOrUsage(&cfg, []string{"-h"}, nil, &out, "usage: tool")
	if ok || err != nil || !strings.HasPrefix(out.String(), "usage: tool\n\n") || !strings.Contains(out.String(), "X_NAME") {
		t.Fatalf("help: ok=%v err=%v out=%q", ok, err, out.String())
	}
	if ok, err := LoadOrUsage(&cfg, []string{"-name=a"}, nil, &out, ""); !ok || err != nil || cfg.Name != "a" {
		t.Fatalf("load: ok=%v err=%v name=%q", ok, err, cfg.Name)
	}
	if ok, err := LoadOrUsage(&cfg, []string{"-nope"}, nil, &out, ""); ok || err == nil {
		t.Fatal("an unknown flag must be an error")
	}
}
