package cephlocal

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// S3Credentials are an RGW user's S3 keys.
type S3Credentials struct {
	AccessKeyID, SecretAccessKey string
}

// String never shows the secret.
func (k S3Credentials) String() string {
	return "S3Credentials{" + k.AccessKeyID + ", secret redacted}"
}

// GoString never shows the secret (%#v).
func (k S3Credentials) GoString() string { return k.String() }

var userID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// S3User returns the S3 keys of RGW user uid, creating the user (display name uid) first when
// it does not exist: idempotent across restarts. Needs the RGW option.
func (c *Cluster) S3User(ctx context.Context, uid string) (S3Credentials, error) {
	if !userID.MatchString(uid) {
		return S3Credentials{}, fmt.Errorf("cephlocal: RGW user id %q: use 1-63 of a-z 0-9 _ -", uid)
	}
	out, err := c.Run(ctx, "radosgw-admin", "user", "info", "--uid", uid)
	if err != nil {
		if out, err = c.Run(ctx, "radosgw-admin", "user", "create", "--uid", uid, "--display-name", uid); err != nil {
			return S3Credentials{}, err
		}
	}
	var info struct {
		Keys []struct {
			User      string `json:"user"`
			AccessKey string `json:"access_key"`
			SecretKey string `json:"secret_key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return S3Credentials{}, fmt.Errorf("cephlocal: radosgw-admin user info: %w", err)
	}
	for _, k := range info.Keys {
		if k.User == uid && k.AccessKey != "" && k.SecretKey != "" {
			return S3Credentials{AccessKeyID: k.AccessKey, SecretAccessKey: k.SecretKey}, nil
		}
	}
	return S3Credentials{}, fmt.Errorf("cephlocal: RGW user %s has no S3 key", uid)
}

// CreateBucket creates bucket name owned by the keys' user; a bucket it already owns is fine.
func (c *Cluster) CreateBucket(ctx context.Context, k S3Credentials, name string) error {
	resp, err := c.s3Do(ctx, k, http.MethodPut, "/"+name, nil)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte("BucketAlreadyOwnedByYou")) {
		return nil
	}
	return fmt.Errorf("cephlocal: create bucket %s: %s: %s", name, resp.Status, s3Code(body))
}

// s3Do sends one S3 request to the radosgw, signed with AWS signature version 2 (which RGW
// accepts): enough for the few calls this package makes without an SDK.
func (c *Cluster) s3Do(ctx context.Context, k S3Credentials, method, path string, body []byte) (*http.Response, error) {
	if !c.opts.RGW {
		return nil, errors.New("cephlocal: the cluster runs no radosgw (Options.RGW)")
	}
	req, err := http.NewRequestWithContext(ctx, method, c.RGWURL()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("Date", date)
	contentType := ""
	if body != nil {
		contentType = "application/octet-stream"
		req.Header.Set("Content-Type", contentType)
	}
	mac := hmac.New(sha1.New, []byte(k.SecretAccessKey))
	mac.Write([]byte(method + "\n\n" + contentType + "\n" + date + "\n" + path))
	req.Header.Set("Authorization", "AWS "+k.AccessKeyID+":"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	client := &http.Client{Timeout: 30 * time.Second}
	return client.Do(req)
}

// s3Code is the <Code> of an S3 error body, never more.
func s3Code(body []byte) string {
	s := string(body)
	if i := strings.Index(s, "<Code>"); i >= 0 {
		s = s[i+len("<Code>"):]
		if j := strings.Index(s, "</Code>"); j >= 0 && j < 64 {
			return s[:j]
		}
	}
	return "no S3 error code"
}
