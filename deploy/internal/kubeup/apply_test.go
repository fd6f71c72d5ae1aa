package kubeup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failing kubectl's error says what it did, never a secret's value.
func TestErrorsHoldNoSecret(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kubectl")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	k := kubectl{o: Options{Kubectl: fake}}
	_, err := k.run(context.Background(), nil, "-n", "plinth", "create", "secret", "generic", "plinth-auth", "--from-literal=admin-password=s3cr3t-value")
	if err == nil || strings.Contains(err.Error(), "s3cr3t-value") || !strings.Contains(err.Error(), "--from-literal=admin-password=…") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error %v: want the command with the value left out and kubectl's reason", err)
	}
}
