package kubetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMissingBinaryNamesTheFix(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(BinDirEnv, dir)
	_, err := binary("kube-apiserver-v1.0.0")
	if err == nil || !strings.Contains(err.Error(), "make tools-k8s") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want the missing path and `make tools-k8s`", err)
	}
	// Present but not executable is missing too.
	if err := os.WriteFile(filepath.Join(dir, "kwok"), []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := binary("kwok"); err == nil {
		t.Fatal("a non-executable kwok was accepted")
	}
}

func TestCRDsInDirRefusesPatternsThatMatchNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.example.com}\n"
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if crds, err := crdsInDir(dir, []string{"*.yaml"}); err != nil || len(crds) != 1 {
		t.Fatalf("crdsInDir(*.yaml) = %d CRDs, %v; want 1", len(crds), err)
	}
	for _, globs := range [][]string{nil, {"moved/*.yaml"}, {"cm.yaml"}} {
		if _, err := crdsInDir(dir, globs); err == nil {
			t.Errorf("crdsInDir(%q) succeeded; upstream moving its files must not go unnoticed", globs)
		}
	}
}
