package azureblob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// errRangeNotSatisfiable: a ranged get starting past the blob's end.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

// serviceError is an answer of the blob service, printed as its status and error code only:
// azcore's own text runs over many lines with the response body, which may echo the
// request. The SDK's error stays reachable (errors.As *azcore.ResponseError).
type serviceError struct {
	status   int
	code     string
	sentinel error // one of objectstore's, or nil
	cause    *azcore.ResponseError
}

func (e *serviceError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.status)
	if e.code != "" {
		s += " " + e.code
	}
	if e.sentinel != nil {
		s += ": " + e.sentinel.Error()
	}
	return s
}

func (e *serviceError) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.cause}
	}
	return []error{e.sentinel, e.cause}
}

// classify adds objectstore's sentinels to an SDK error and strips what must not be shown.
// ifAbsent says whether the request was a write with If-None-Match: *, where
// BlobAlreadyExists (409) and ConditionNotMet (412) mean another blob holds the name. Context errors stay what they are (errors.Is finds them).
func (s *Store) classify(err error, ifAbsent bool) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return s.redact(err)
	}
	e := &serviceError{status: re.StatusCode, code: re.ErrorCode, cause: re}
	code := bloberror.Code(re.ErrorCode)
	switch {
	case code == bloberror.ContainerNotFound:
		e.sentinel = objectstore.ErrBucketMissing
	case ifAbsent && (code == bloberror.BlobAlreadyExists || code == bloberror.ConditionNotMet ||
		re.StatusCode == http.StatusPreconditionFailed && code == ""):
		e.sentinel = objectstore.ErrExists
	case re.StatusCode == http.StatusRequestedRangeNotSatisfiable || code == bloberror.InvalidRange:
		e.sentinel = errRangeNotSatisfiable
	case re.StatusCode == http.StatusNotFound || code == bloberror.BlobNotFound:
		e.sentinel = objectstore.ErrNotFound
	case re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized ||
		code == bloberror.AuthenticationFailed || code == bloberror.AuthorizationFailure ||
		code == bloberror.AuthorizationPermissionMismatch || code == bloberror.InsufficientAccountPermissions:
		e.sentinel = objectstore.ErrDenied
	}
	return e
}

// redactedError prints its cause's text with every URL's query (a SAS token travels there)
// and every configured secret replaced; errors.Is and errors.As still reach the cause.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// urlQuery matches the query of a URL in an error's text (net/url.Error quotes the request URL).
var urlQuery = regexp.MustCompile(`(https?://[^\s"'?]*)\?[^\s"']*`)

// redact hides secrets in a transport or credential error. An Azure AD failure becomes
// ErrDenied with a hint: the default credential chain found nothing usable, or was refused.
func (s *Store) redact(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded { //nolint:errorlint // the bare value carries no secret
		return err
	}
	msg := urlQuery.ReplaceAllString(err.Error(), "$1?REDACTED")
	for _, secret := range s.secrets {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "REDACTED")
		}
	}
	var authErr *azidentity.AuthenticationFailedError
	if errors.As(err, &authErr) || strings.Contains(msg, "DefaultAzureCredential") {
		return &redactedError{msg: "Azure AD authentication failed (default Azure credential): " + msg,
			cause: errors.Join(objectstore.ErrDenied, err)}
	}
	return &redactedError{msg: msg, cause: err}
}
