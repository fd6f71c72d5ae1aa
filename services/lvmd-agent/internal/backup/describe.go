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

// describe is a job's failure as its message says it, and as the agent logs it. An endpoint
// is the client's choice (data_source.s3.endpoint), so whatever answered there — an SSH or
// SMTP banner, an HTML page — must never be quoted back: it would turn backups into a probe
// of the node's local services. What failed is said in plain words instead (issue #36); any
// other error is the agent's own text (no error on this path carries a credential).
func describe(err error) string {
	switch {
	case errors.Is(err, objectstore.ErrDenied):
		return "the object store refused the credentials or the operation"
	case errors.Is(err, objectstore.ErrBucketMissing):
		return "the bucket in data_source.s3.path does not exist"
	}
	var sendErr *smithyhttp.RequestSendError
	var apiErr smithy.APIError
	var status interface{ HTTPStatusCode() int }
	switch {
	case errors.As(err, &sendErr):
		return "the object store at data_source.s3.endpoint " + unreachable(err)
	case errors.As(err, &apiErr):
		// S3's error codes are short words (NoSuchKey, SlowDown); anything else is not
		// repeated.
		code := "an error"
		if c := apiErr.ErrorCode(); s3Code.MatchString(c) {
			code = c
		}
		return fmt.Sprintf("the object store answered %s (HTTP %d)", code, httpStatus(err))
	case errors.As(err, &status):
		return fmt.Sprintf("the endpoint answered HTTP %d, which is not an S3 answer", status.HTTPStatusCode())
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
