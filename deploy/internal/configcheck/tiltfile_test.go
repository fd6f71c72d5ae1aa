package configcheck

import (
	"testing"
)

func runTiltfile(t *testing.T, src []byte, env map[string]string) ([]TiltResource, error) {
	t.Helper()
	rs, err := RunTiltfile(repoRoot(t), src, env)
	if err != nil {
		return nil, err
	}
	return rs, CheckTiltResources(repoRoot(t), rs)
}

func TestTiltfileServesExistingCommands(t *testing.T) {
	rs, err := runTiltfile(t, readRepoFile(t, "Tiltfile"), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	var auth *TiltResource
	for i := range rs {
		if rs[i].Name == "auth" {
			auth = &rs[i]
		}
	}
	if auth == nil {
		t.Fatalf("no auth resource in %+v", rs)
	}
	if auth.ServeCmd != "go run ./services/auth/cmd/auth" {
		t.Errorf("auth serve_cmd %q", auth.ServeCmd)
	}
	for k, want := range map[string]string{
		"PLINTH_GRPC_ADDR":    "127.0.0.1:7001",
		"PLINTH_ADMIN_ADDR":   "127.0.0.1:7101",
		"PLINTH_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/plinth?sslmode=disable",
		"PLINTH_NATS_URL":     "nats://127.0.0.1:4222",
	} {
		if got := auth.ServeEnv[k]; got != want {
			t.Errorf("auth serve_env %s = %q, want %q", k, got, want)
		}
	}
	if p := auth.Probe; p == nil || p.Port != 7101 || p.Path != "/readyz" {
		t.Errorf("auth readiness probe %+v, want GET 127.0.0.1:7101/readyz", p)
	}
	want := map[string]bool{"services/auth": true, "libs": true}
	for _, d := range auth.Deps {
		delete(want, d)
	}
	if len(want) > 0 {
		t.Errorf("auth deps %v miss %v: changes there would not restart it", auth.Deps, want)
	}
}

func TestTiltfileTakesInfrastructureFromEnvironment(t *testing.T) {
	env := map[string]string{"PLINTH_DATABASE_URL": "postgres://db.example:5433/x", "PLINTH_NATS_URL": "nats://nats.example:4223"}
	rs, err := runTiltfile(t, readRepoFile(t, "Tiltfile"), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.ServeEnv["PLINTH_DATABASE_URL"] != env["PLINTH_DATABASE_URL"] || r.ServeEnv["PLINTH_NATS_URL"] != env["PLINTH_NATS_URL"] {
			t.Errorf("%s ignores the environment: %v", r.Name, r.ServeEnv)
		}
	}
}

// TestTiltfileRejects proves the checks bite: each broken copy must be refused.
func TestTiltfileRejects(t *testing.T) {
	src := readRepoFile(t, "Tiltfile")
	for _, tc := range []struct{ name, old, new, want string }{
		{"service that does not exist", "plinth_service('auth', 7001, 7101)", "plinth_service('authz', 7001, 7101)",
			"services/authz/cmd/authz holds no Go files"},
		{"misspelt Tilt parameter", "serve_env=serve_env,", "serve_envs=serve_env,", "unexpected keyword argument"},
		{"probe on the wrong path", "path='/readyz'", "path='/healthz'", "readiness probe asks"},
		{"probe on the wrong port", "port=admin_port,", "port=grpc_port,", "readiness probe asks"},
		{"Tilt function without a stand-in", "plinth_service('auth', 7001, 7101)", "docker_build('auth', '.')", "undefined: docker_build"},
		{"non-string env value", "'PLINTH_LOG_FORMAT': 'text',", "'PLINTH_LOG_FORMAT': 1,", "keys and values must be strings"},
		{"missing dep", "'libs', 'go.work'", "'libz', 'go.work'", "dep libz does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runTiltfile(t, mutate(t, src, tc.old, tc.new), map[string]string{})
			wantErr(t, err, tc.want)
		})
	}
}
