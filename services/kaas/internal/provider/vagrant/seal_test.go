package vagrant

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// machineKey runs keyScript in dir, as the key job does on a machine, and returns what it
// printed: the machine's public key.
func machineKey(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("the machines' key and the unsealing need openssl (apt-get install openssl)")
	}
	out, err := exec.Command("/bin/sh", "-c", withVars(keyScript, [][2]string{{"D", dir}})).CombinedOutput()
	if err != nil {
		t.Fatalf("key script: %v: %s", err, out)
	}
	return string(out)
}

// unseal runs the bootstrap's unseal on args in the machine dir and returns the files it
// opened.
func unseal(t *testing.T, dir string, args []string) (string, error) {
	t.Helper()
	script := withVars(`set -eu
fail() { echo "kaas: $*" >&2; exit 1; }
`+unsealScript+`
unseal "$1" "$2" "$3"
cat "$W/files"`, [][2]string{{"D", dir}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "unseal"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

// TestBootstrapArgsHoldNoKey is issue #36's attacker reading the bootstrap job's arguments
// (vagrant-server's jobs table, GetJob, GetJobStream): they held ca.key, sa.key,
// apiserver.key, etcd.key and admin.key base64. Now they hold ciphertext sealed for the
// machine's own key, which only the machine opens (with openssl alone), and a changed byte
// is refused before anything is decrypted.
func TestBootstrapArgsHoldNoKey(t *testing.T) {
	keys, err := pki.New("c")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "machine")
	pub := machineKey(t, dir)
	if fi, err := os.Stat(filepath.Join(dir, "machine.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the machine key: %v %v, want mode 0600", fi, err)
	}
	if strings.Contains(pub, "PRIVATE") {
		t.Fatalf("the key job printed its private key: %s", pub)
	}
	if again := machineKey(t, dir); again != pub {
		t.Fatal("a second key job made another key: files sealed to the first would not open")
	}
	p := &Provider{o: Options{MachineDir: "/var/lib/plinth-kaas", KubeBinDir: "/bin", Etcd: "/usr/bin/etcd"}}
	m := provider.Machine{ClusterUID: "u", Cluster: "c", Name: "c-control-plane-1", Role: cluster.RoleControlPlane}
	st := progress{Address: "10.213.0.2", MachineKey: pub}
	args, err := p.bootstrapArgs(m, provider.Bootstrap{Version: "v1.33.13", Init: true, PKI: keys, ControlPlaneSize: 1}, st)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, "\n")
	files, err := unseal(t, dir, args[4:])
	if err != nil {
		t.Fatalf("the machine cannot open its files: %v: %s", err, files)
	}
	// Every private key the machine receives, in PEM and in base64 as the arguments carried
	// them before; none may be in the arguments.
	secrets := map[string][]byte{"ca.key": keys.CA.KeyPEM, "sa.key": keys.ServiceAccountKey}
	for _, line := range strings.Split(strings.TrimSpace(files), "\n") {
		name, b64, _ := strings.Cut(line, "=")
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("file %s: %v", name, err)
		}
		if strings.HasSuffix(name, ".key") {
			secrets[name] = data
		}
	}
	for _, want := range []string{"ca.key", "sa.key", "apiserver.key", "etcd.key", "kcm.key", "node.key", "kaas.key"} {
		if len(secrets[want]) == 0 {
			t.Errorf("the unsealed files lack %s", want)
		}
	}
	if strings.Contains(joined, "PRIVATE KEY") || strings.Contains(joined, "LS0tLS1CRUdJTi") {
		t.Fatal("the bootstrap's arguments hold PEM")
	}
	for name, data := range secrets {
		for _, enc := range []string{base64.StdEncoding.EncodeToString(data), string(data)} {
			if strings.Contains(joined, enc) {
				t.Errorf("the bootstrap's arguments hold %s", name)
			}
		}
	}

	t.Run("a changed byte is refused", func(t *testing.T) {
		ct, _ := base64.StdEncoding.DecodeString(args[5])
		ct[len(ct)-1] ^= 1
		bad := []string{args[4], base64.StdEncoding.EncodeToString(ct), args[6]}
		if out, err := unseal(t, dir, bad); err == nil || !strings.Contains(out, "do not verify") {
			t.Fatalf("altered ciphertext: %v %q", err, out)
		}
	})
	t.Run("another machine cannot open them", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		machineKey(t, other)
		if out, err := unseal(t, other, args[4:]); err == nil || !strings.Contains(out, "not sealed for this machine's key") {
			t.Fatalf("another machine's key: %v %q", err, out)
		}
	})
	t.Run("weak or foreign keys are refused", func(t *testing.T) {
		small, err := exec.Command("/bin/sh", "-c", "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 2>/dev/null | openssl pkey -pubout").Output()
		if err != nil {
			t.Fatal(err)
		}
		ec, err := exec.Command("/bin/sh", "-c", "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null | openssl pkey -pubout").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{string(small), string(ec), "", "-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n"} {
			if _, err := sealedArgs(k, []byte("x=eA==\n")); err == nil {
				t.Errorf("sealed to %.60q", k)
			}
		}
	})
}
