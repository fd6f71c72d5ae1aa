package launcher

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteEndpointsRedactsPasswordsAndReplacesAtomically(t *testing.T) {
	home := t.TempDir()
	e := Endpoints{
		NATS:     "nats://127.0.0.1:4222",
		Database: "postgres://app:s3cret@db:5432/plinth?sslmode=disable",
		Services: []ServiceEndpoint{{Name: "auth", GRPC: "127.0.0.1:7001", Admin: "127.0.0.1:7101", PID: 42}},
	}
	if err := writeEndpoints(home, e); err != nil {
		t.Fatal(err)
	}
	if err := writeEndpoints(home, Endpoints{NATS: e.NATS, Database: e.Database, Services: e.Services}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(home, EndpointsFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("s3cret")) {
		t.Fatalf("password written to endpoints.json: %s", data)
	}
	var got Endpoints
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.NATS != e.NATS || got.Services[0] != e.Services[0] || !strings.HasPrefix(got.Database, "postgres://app:") {
		t.Errorf("round trip = %+v", got)
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestWriteEndpointsWithNoServicesWritesAnEmptyList(t *testing.T) {
	home := t.TempDir()
	if err := writeEndpoints(home, Endpoints{NATS: "nats://x:1", Database: "postgres://y/z"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(home, EndpointsFile))
	if !bytes.Contains(data, []byte(`"services": []`)) {
		t.Fatalf("want an empty services list for readers, got %s", data)
	}
}

func TestPrintEndpoints(t *testing.T) {
	var out bytes.Buffer
	e := Endpoints{
		NATS: "nats://127.0.0.1:4222", Database: "postgres://u:pw@h/db",
		Services: []ServiceEndpoint{
			{Name: "auth", GRPC: "127.0.0.1:7001", Admin: "127.0.0.1:7101"},
			{Name: "vagrant-runner", Admin: "127.0.0.1:7107"},
		},
	}
	printEndpoints(&out, e)
	s := out.String()
	for _, want := range []string{"127.0.0.1:7001", "http://127.0.0.1:7101/healthz", "vagrant-runner  -"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "pw@") {
		t.Errorf("password printed:\n%s", s)
	}
	if got := grpcurlHint(e); got != "try: bin/grpcurl -plaintext 127.0.0.1:7001 list" {
		t.Errorf("hint = %q", got)
	}
}

func TestEndpointsNameTheGateway(t *testing.T) {
	home := t.TempDir()
	e := Endpoints{NATS: "nats://x:1", Database: "postgres://y/z", Gateway: "127.0.0.1:8080",
		Services: []ServiceEndpoint{{Name: "auth", GRPC: "127.0.0.1:7001", Admin: "127.0.0.1:7101"}}}
	if err := writeEndpoints(home, e); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(home, EndpointsFile))
	if !bytes.Contains(data, []byte(`"gateway": "127.0.0.1:8080"`)) {
		t.Fatalf("endpoints.json lacks the gateway: %s", data)
	}
	var out bytes.Buffer
	printEndpoints(&out, e)
	if !strings.Contains(out.String(), "Gateway") || !strings.Contains(out.String(), "127.0.0.1:8080") {
		t.Errorf("summary lacks the gateway:\n%s", out.String())
	}
	if got := grpcurlHint(e); got != "try: bin/grpcurl -plaintext 127.0.0.1:8080 list" {
		t.Errorf("hint = %q, want the gateway", got)
	}
}

func TestGatewayEnvNamesEveryPlacedBackend(t *testing.T) {
	placed, _, err := Plan([]Binary{{Service: "auth", Name: "auth"}, {Service: "lvmd-agent", Name: "lvmd-agent"},
		{Service: "gateway", Name: "gateway"}}, "/h", 0, allFree)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Placement{}
	for _, p := range placed {
		byName[p.Spec.Binary] = p
	}
	if g := byName["gateway"]; g.GRPC != "127.0.0.1:8080" || g.Admin != "127.0.0.1:8180" {
		t.Fatalf("gateway placed at %s/%s", g.GRPC, g.Admin)
	}
	env := gatewayEnv(Config{Home: "/h"}, byName)
	want := map[string]string{
		// auth's gateway listener, whose x-forwarded-for auth believes (not its TCP port).
		"PLINTH_AUTH_ADDR":                  "unix:///h/auth-gateway.sock",
		"PLINTH_GATEWAY_BACKEND_LVMD_AGENT": "unix:///h/lvmd.sock",
	}
	if len(env) != len(want) {
		t.Fatalf("env = %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}
