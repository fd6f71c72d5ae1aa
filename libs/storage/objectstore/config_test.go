package objectstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

func TestS3ConfigValidate(t *testing.T) {
	creds := func(c objectstore.S3Config) objectstore.S3Config {
		c.AccessKeyID, c.SecretAccessKey = secret.Ref{Env: "A"}, secret.Ref{Env: "B"}
		return c
	}
	cases := []struct {
		c    objectstore.S3Config
		want string
	}{
		{creds(objectstore.S3Config{}), "s3.bucket is required"},
		{objectstore.S3Config{Bucket: "b"}, "s3.accessKeyId and s3.secretAccessKey are required"},
		{creds(objectstore.S3Config{Bucket: "b", PartSizeMiB: 1}), "partSizeMiB"},
		{creds(objectstore.S3Config{Bucket: "b", Concurrency: 100}), "concurrency"},
		{creds(objectstore.S3Config{Bucket: "b", Endpoint: "s3.example.com"}), "s3.endpoint"},
		{creds(objectstore.S3Config{Bucket: "b", HTTPProxy: "proxy"}), "httpProxy"},
		{creds(objectstore.S3Config{Bucket: "no/slash"}), "s3.bucket"},
	}
	for _, c := range cases {
		if err := c.c.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
	if err := creds(objectstore.S3Config{Bucket: "b", Endpoint: "https://s3.example.com"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestS3ConfigResolvesSecretsWithoutRevealingThem(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("file-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := objectstore.S3Config{
		Bucket: "b", AccessKeyID: secret.Ref{Env: "ID"}, SecretAccessKey: secret.Ref{File: file},
		SessionToken: secret.Ref{Env: "TOKEN"}, PartSizeMiB: 8, HTTPSProxy: "http://proxy:3128",
	}
	o, err := c.Options("pre/fix", map[string]string{"ID": "env-key-id", "TOKEN": "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if o.AccessKeyID != "env-key-id" || o.SecretAccessKey != "file-secret-value" || o.SessionToken != "tok" ||
		o.PartSize != 8<<20 || o.Prefix != "pre/fix" || o.Region != objectstore.DefaultRegion || o.HTTPSProxy != "http://proxy:3128" {
		t.Fatalf("options %+v", o)
	}
	_, err = c.Options("", map[string]string{"TOKEN": "tok"})
	if err == nil || !strings.Contains(err.Error(), "s3.accessKeyId: environment variable ID is not set") {
		t.Fatalf("missing env: %v", err)
	}
	c.CAFile = filepath.Join(dir, "none.pem")
	if _, err := c.Options("", map[string]string{"ID": "x", "TOKEN": "t"}); err == nil || !strings.Contains(err.Error(), "s3.caFile") {
		t.Fatalf("missing CA file: %v", err)
	}
}
