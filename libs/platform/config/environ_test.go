package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

type childConfig struct {
	Name    string        `env:"PLINTH_T_NAME" flag:"name"`
	Dir     string        `env:"PLINTH_T_DIR" flag:"dir" default:"/d"`
	Wait    time.Duration `env:"PLINTH_T_WAIT" flag:"wait"`
	List    []string      `env:"PLINTH_T_LIST"`
	Only    bool          `flag:"only"`
	Skipped int           `env:"PLINTH_T_SKIPPED" flag:"skipped"`
}

// What Environ and Args write, Load reads back as the same Config: they are how one program
// tells another's Config what to hold without spelling its names.
func TestEnvironAndArgsRoundTripThroughLoad(t *testing.T) {
	in := childConfig{Name: "n", Dir: "/x y", Wait: 1500 * time.Millisecond, List: []string{"a", "b"}, Only: true}
	env := Environ(&in)
	if want := []string{"PLINTH_T_NAME=n", "PLINTH_T_DIR=/x y", "PLINTH_T_WAIT=1.5s", "PLINTH_T_LIST=a,b"}; !slices.Equal(env, want) {
		t.Errorf("Environ = %q, want %q (declaration order, zero fields and flag-only fields left out)", env, want)
	}
	args := Args(&in)
	if want := []string{"-name=n", "-dir=/x y", "-wait=1.5s", "-only=true"}; !slices.Equal(args, want) {
		t.Errorf("Args = %q, want %q", args, want)
	}
	var fromEnv, fromArgs childConfig
	if err := Load(&fromEnv, nil, env); err != nil {
		t.Fatal(err)
	}
	if err := Load(&fromArgs, args, nil); err != nil {
		t.Fatal(err)
	}
	fromEnv.Only = true // flag-only: not in the environment
	for _, got := range []childConfig{fromEnv, fromArgs} {
		if got.Name != in.Name || got.Dir != in.Dir || got.Wait != in.Wait || got.Only != in.Only ||
			(len(got.List) > 0 && !slices.Equal(got.List, in.List)) {
			t.Errorf("read back %+v, want %+v", got, in)
		}
	}
	if Environ(in) != nil || Args(in) != nil {
		t.Error("not a pointer: want nil")
	}
}

type renamedConfig struct {
	AuthAddr string `env:"PLINTH_T_AUTH_ADDR" renamed:"PLINTH_T_OLD_AUTH, PLINTH_T_OLDER_AUTH" flag:"auth-addr"`
	Other    string `env:"PLINTH_T_OTHER"`
}

// A former name still set fails Load with the new name in the message, whether or not the
// new one is set too; unset or empty, it is nothing.
func TestLoadRefusesARenamedSetting(t *testing.T) {
	for _, environ := range [][]string{
		{"PLINTH_T_OLD_AUTH=auth:7001"},
		{"PLINTH_T_OLDER_AUTH=auth:7001", "PLINTH_T_AUTH_ADDR=auth:7001"},
	} {
		var c renamedConfig
		err := Load(&c, nil, environ)
		if err == nil || !strings.Contains(err.Error(), "was renamed PLINTH_T_AUTH_ADDR") {
			t.Errorf("%q: Load = %v, want an error naming PLINTH_T_AUTH_ADDR", environ, err)
		}
	}
	var c renamedConfig
	if err := Load(&c, nil, []string{"PLINTH_T_OLD_AUTH=", "PLINTH_T_AUTH_ADDR=a:1"}); err != nil || c.AuthAddr != "a:1" {
		t.Errorf("empty former name: Load = %v, AuthAddr %q", err, c.AuthAddr)
	}
}

func TestRenamedTagMistakesAreReported(t *testing.T) {
	var noEnv struct {
		A string `flag:"a" renamed:"PLINTH_T_A"`
	}
	if err := Load(&noEnv, nil, nil); err == nil || !strings.Contains(err.Error(), "renamed tag but no env tag") {
		t.Errorf("renamed without env: %v", err)
	}
	var clash struct {
		A string `env:"PLINTH_T_A"`
		B string `env:"PLINTH_T_B" renamed:"PLINTH_T_A"`
	}
	if err := Load(&clash, nil, nil); err == nil || !strings.Contains(err.Error(), "both use env PLINTH_T_A") {
		t.Errorf("former name of one field is another's name: %v", err)
	}
}

func TestNamesListsEnvNamesInOrder(t *testing.T) {
	if got, want := Names(&childConfig{}), []string{"PLINTH_T_NAME", "PLINTH_T_DIR", "PLINTH_T_WAIT", "PLINTH_T_LIST", "PLINTH_T_SKIPPED"}; !slices.Equal(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
	if !slices.Contains(Names(&Common{}), EnvDatabaseURL) || Names(Common{}) != nil {
		t.Error("Names of Common")
	}
}
