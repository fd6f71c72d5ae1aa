package objectstore

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
)

// newHTTPClient bounds every phase of a request except the body transfer (a multi-GiB
// object may legitimately take long; the caller's context bounds the whole call) and adds
// the custom CA to the system pool.
func newHTTPClient(caPEM []byte) (*awshttp.BuildableClient, error) {
	var roots *x509.CertPool
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("s3 store: the CA file holds no PEM certificate")
		}
		roots = pool
	}
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 10 * time.Second }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = 10 * time.Second
			t.ResponseHeaderTimeout = time.Minute
			t.MaxIdleConnsPerHost = 32 // parallel WAL archive and multipart parts reuse connections
			if roots != nil {
				t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			}
		}), nil
}

func staticCredentials(o S3Options) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)
}

// ErrBucketMissing: the configured bucket does not exist (a configuration error, not a
// missing object).
var ErrBucketMissing = errors.New("bucket does not exist")

// classify adds the store's sentinels to an S3 error. put says whether the request was a
// conditional write, where 412 and 409 mean another object already holds the key.
func classify(err error, put bool) error {
	var apiErr smithy.APIError
	code := ""
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	switch {
	case code == "NoSuchBucket":
		return errors.Join(err, ErrBucketMissing)
	case put && (status == http.StatusPreconditionFailed || code == "PreconditionFailed" ||
		code == "ConditionalRequestConflict"):
		return errors.Join(err, ErrExists)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return errors.Join(err, ErrNotFound)
	case status == http.StatusForbidden || status == http.StatusUnauthorized || code == "AccessDenied" ||
		code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return errors.Join(err, ErrDenied)
	}
	return err
}
