package backup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"syscall"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// describe is a job's failure as its message says it, and as the agent logs it, in words
// that name the target's bucket and endpoint. An endpoint is the client's choice
// (data_source.s3.endpoint), so whatever answered there — an SSH or SMTP banner, an HTML page
// — must never be quoted back: it would turn backups into a probe of the node's local
// services. What failed is said in plain words instead (issue #36); any other error is the
// agent's own text (no error on this path carries a credential).
func describe(err error, t Target) string {
	var se *StoreError
	if errors.As(err, &se) {
		return se.Error()
	}
	return describeAt(err, t.S3.Bucket, t.endpoint())
}

// StoreError is a failure of the object store that holds (or is to hold) a backup, with the
// bucket and endpoint it concerns: its text says what failed in words (describeAt), and it
// unwraps to the store's error (objectstore.ErrDenied, ErrBucketMissing, the SDK's).
type StoreError struct {
	Bucket, Endpoint string
	Err              error
}

func (e *StoreError) Error() string { return describeAt(e.Err, e.Bucket, e.Endpoint) }

func (e *StoreError) Unwrap() error { return e.Err }

// inStore wraps an object store failure of target t in a *StoreError; the backup's own
// outcomes (no backup there, a manifest of another, damaged data) and a canceled context
// pass as they are.
func inStore(t Target, err error) error {
	var taken *PathTakenError
	switch {
	case err == nil, errors.Is(err, ErrNoBackup), errors.Is(err, ErrBadManifest), errors.Is(err, ErrChecksum),
		errors.As(err, &taken), errors.Is(err, context.Canceled):
		return err
	}
	return &StoreError{Bucket: t.S3.Bucket, Endpoint: t.endpoint(), Err: err}
}

// describeAt says err in words, naming bucket and endpoint where they help.
func describeAt(err error, bucket, endpoint string) string {
	switch {
	case errors.Is(err, objectstore.ErrDenied):
		return fmt.Sprintf("access denied: the store at %s refused the credentials or the operation on bucket %s", endpoint, bucket)
	case errors.Is(err, objectstore.ErrBucketMissing):
		return fmt.Sprintf("the bucket %s does not exist at %s", bucket, endpoint)
	}
	var sendErr *smithyhttp.RequestSendError
	var apiErr smithy.APIError
	var status interface{ HTTPStatusCode() int }
	switch {
	case errors.As(err, &sendErr):
		return "the object store at " + endpoint + " " + unreachable(err)
	case errors.As(err, &apiErr):
		// S3's error codes are short words (NoSuchKey, SlowDown); anything else is not
		// repeated.
		code := "an error"
		if c := apiErr.ErrorCode(); s3Code.MatchString(c) {
			code = c
		}
		return fmt.Sprintf("the object store at %s answered %s (HTTP %d)", endpoint, code, httpStatus(err))
	case errors.As(err, &status):
		return fmt.Sprintf("the endpoint %s answered HTTP %d, which is not an S3 answer", endpoint, status.HTTPStatusCode())
	}
	return err.Error()
}

// s3Code is what an S3 error code looks like.
var s3Code = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,63}$`)

// unreachable says why a request to the endpoint got no HTTP answer, in the agent's words.
func unreachable(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "could not be reached: connection refused"
	case errors.As(err, &dnsErr):
		return "could not be reached: its host name does not resolve"
	case errors.As(err, &certErr):
		return "could not be reached: its TLS certificate is not trusted (verify_tls)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "could not be reached: timed out"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed the connection without answering"
	}
	return "did not answer as an S3 server (not HTTP, or the connection broke)"
}

// httpStatus is the status of err's HTTP response, 0 without one.
func httpStatus(err error) int {
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		return status.HTTPStatusCode()
	}
	return 0
}
