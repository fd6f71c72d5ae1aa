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

// BucketUser returns the S3 keys of RGW user uid limited to one bucket: uid (created when
// missing) owns bucket — created, or taken over with its objects from another owner (a dev
// Ceph from before the users were separate) — and may create no other. RGW lets no other user
// read or write a bucket unless its policy says so; the policy set here grants the users of
// also (an operator's) and nobody else, so two services given two such users cannot touch
// each other's objects. Idempotent across restarts.
func (c *Cluster) BucketUser(ctx context.Context, uid, bucket string, also ...string) (S3Credentials, error) {
	keys, err := c.S3User(ctx, uid)
	if err != nil {
		return S3Credentials{}, err
	}
	owner, err := c.bucketOwner(ctx, bucket)
	if err != nil {
		return S3Credentials{}, err
	}
	switch owner {
	case uid:
	case "":
		// One bucket allowed while it is made; none after (negative: no creation at all).
		if _, err := c.Run(ctx, "radosgw-admin", "user", "modify", "--uid", uid, "--max-buckets", "1"); err != nil {
			return S3Credentials{}, err
		}
		if err := c.CreateBucket(ctx, keys, bucket); err != nil {
			return S3Credentials{}, err
		}
	default:
		// link moves the bucket to uid; chown makes uid the owner of the objects in it too.
		for _, verb := range []string{"link", "chown"} {
			if _, err := c.Run(ctx, "radosgw-admin", "bucket", verb, "--bucket", bucket, "--uid", uid); err != nil {
				return S3Credentials{}, fmt.Errorf("cephlocal: give bucket %s of %s to %s: %w", bucket, owner, uid, err)
			}
		}
	}
	if _, err := c.Run(ctx, "radosgw-admin", "user", "modify", "--uid", uid, "--max-buckets", "-1"); err != nil {
		return S3Credentials{}, err
	}
	if err := c.grantBucket(ctx, keys, bucket, also); err != nil {
		return S3Credentials{}, err
	}
	return keys, nil
}

// grantBucket sets bucket's policy (as its owner, k): full access for the users named, and
// for no one else (an empty list removes the policy).
func (c *Cluster) grantBucket(ctx context.Context, k S3Credentials, bucket string, users []string) error {
	method, body := http.MethodDelete, []byte(nil)
	if len(users) > 0 {
		principals := make([]string, len(users))
		for i, u := range users {
			if !userID.MatchString(u) {
				return fmt.Errorf("cephlocal: RGW user id %q: use 1-63 of a-z 0-9 _ -", u)
			}
			principals[i] = "arn:aws:iam:::user/" + u
		}
		policy := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
			"Effect": "Allow", "Principal": map[string]any{"AWS": principals}, "Action": []string{"s3:*"},
			"Resource": []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"},
		}}}
		var err error
		if body, err = json.Marshal(policy); err != nil {
			return err
		}
		method = http.MethodPut
	}
	resp, err := c.s3Do(ctx, k, method, "/"+bucket+"?policy", body)
	if err != nil {
		return err
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("cephlocal: set the policy of bucket %s: %s: %s", bucket, resp.Status, s3Code(data))
	}
	return nil
}

// bucketOwner is the RGW user owning bucket, "" when there is no such bucket.
func (c *Cluster) bucketOwner(ctx context.Context, bucket string) (string, error) {
	out, err := c.Run(ctx, "radosgw-admin", "bucket", "stats", "--bucket", bucket)
	if err != nil {
		// Its words for a missing bucket differ by release and by what the zone holds yet;
		// 2002 is RGW's ERR_NO_SUCH_BUCKET, printed as "(2002) Unknown error 2002".
		if msg := err.Error(); strings.Contains(msg, "No such file or directory") || strings.Contains(msg, "could not get bucket info") ||
			strings.Contains(msg, "(2002)") {
			return "", nil
		}
		return "", err
	}
	var stats struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(out), &stats); err != nil || stats.Owner == "" {
		return "", fmt.Errorf("cephlocal: radosgw-admin bucket stats %s: no owner in its answer", bucket)
	}
	return stats.Owner, nil
}

// S3Request sends one S3 request, signed with k, to the radosgw (path "/bucket/key"): for
// checks of what a user may do. The caller closes the body.
func (c *Cluster) S3Request(ctx context.Context, k S3Credentials, method, path string, body []byte) (*http.Response, error) {
	return c.s3Do(ctx, k, method, path, body)
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
