package gcs_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

func TestConfigValidate(t *testing.T) {
	key := secret.Ref{Env: "GCS_KEY"}
	cases := []struct {
		name string
		c    gcs.Config
		want []string // substrings of the error; none: valid
	}{
		{"key", gcs.Config{Bucket: "pg-archive", GoogleCredentials: gcs.GoogleCredentials{ApplicationCredentials: key}}, nil},
		{"gke", gcs.Config{Bucket: "pg-archive", GoogleCredentials: gcs.GoogleCredentials{GKEEnvironment: true}, ChunkSizeMiB: 8}, nil},
		{"emulator without credentials", gcs.Config{Bucket: "pg-archive", Endpoint: "http://127.0.0.1:4443"}, nil},
		{"empty", gcs.Config{}, []string{"gcs.bucket is required", "gcs.googleCredentials:"}},
		{"bad bucket", gcs.Config{Bucket: "Pg_Archive", GoogleCredentials: gcs.GoogleCredentials{GKEEnvironment: true}}, []string{"gcs.bucket:"}},
		{"both", gcs.Config{Bucket: "pg-archive", GoogleCredentials: gcs.GoogleCredentials{ApplicationCredentials: key, GKEEnvironment: true}}, []string{"not both"}},
		{"chunk", gcs.Config{Bucket: "pg-archive", Endpoint: "http://e:1", ChunkSizeMiB: -1}, []string{"gcs.chunkSizeMiB"}},
		{"endpoint with credentials", gcs.Config{Bucket: "pg-archive", Endpoint: "http://user:hunter2@e:1"}, []string{"gcs.endpoint"}},
		{"endpoint with path", gcs.Config{Bucket: "pg-archive", Endpoint: "http://e:1/storage/v1/"}, []string{"gcs.endpoint"}},
	}
	for _, c := range cases {
		err := c.c.Validate()
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows a password: %v", c.name, err)
		}
	}
}

// TestSecretsStayOut: neither a resolution error, a rejected key nor the logs show the key.
func TestSecretsStayOut(t *testing.T) {
	const secretBit = "-----BEGIN PRIVATE KEY-----\nMIIEsecretsecret"
	c := gcs.Config{Bucket: "pg-archive", GoogleCredentials: gcs.GoogleCredentials{ApplicationCredentials: secret.Ref{Env: "GCS_KEY"}}}
	if _, err := c.Options("", map[string]string{}); err == nil || !strings.Contains(err.Error(), "gcs.googleCredentials.applicationCredentials") {
		t.Fatalf("missing variable: %v", err)
	}
	for _, key := range []string{
		`{"type":"service_account","private_key":"` + secretBit + `"`, // not JSON
		`{"type":"service_account","private_key":"` + secretBit + `","client_email":7}`,
		`{"type":"external_account","private_key":"` + secretBit + `"}`,
	} {
		o, err := c.Options("p", map[string]string{"GCS_KEY": key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = gcs.New(context.Background(), o)
		if err == nil {
			t.Fatalf("key %.40q accepted", key)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "PRIVATE") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	// A valid (if unusable) key: New succeeds without contacting anyone; logs omit it.
	keyFile, _ := serviceAccount(t, true)
	c.GoogleCredentials.ApplicationCredentials = secret.Ref{File: keyFile}
	o, err := c.Options("p", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := gcs.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("store", "options", o, "store", st)
	if strings.Contains(buf.String(), "PRIVATE KEY") || !strings.Contains(buf.String(), `"credentials":"service account key"`) {
		t.Fatalf("log line: %s", buf.String())
	}
}
