package objectstore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
)

// newHTTPClient bounds every phase of a request except the body transfer (a multi-GiB
// object may legitimately take long; the caller's context bounds the whole call), adds the
// custom CA to the system pool and routes through the configured proxies.
func newHTTPClient(o S3Options) (*awshttp.BuildableClient, error) {
	var tlsConf *tls.Config
	if len(o.CAPEM) > 0 || o.InsecureSkipVerify {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.InsecureSkipVerify} //nolint:gosec // asked for explicitly
	}
	if len(o.CAPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return nil, errors.New("s3 store: the CA file holds no PEM certificate")
		}
		tlsConf.RootCAs = pool
	}
	proxy, err := proxyFunc(o.HTTPProxy, o.HTTPSProxy)
	if err != nil {
		return nil, err
	}
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 10 * time.Second }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = 10 * time.Second
			t.ResponseHeaderTimeout = time.Minute
			t.MaxIdleConnsPerHost = 32 // parallel uploads and multipart parts reuse connections
			if tlsConf != nil {
				t.TLSClientConfig = tlsConf
			}
			if proxy != nil {
				t.Proxy = proxy
			}
		}), nil
}

// proxyFunc chooses the proxy by the request's scheme; nil keeps the SDK's default (the
// environment's HTTP_PROXY, HTTPS_PROXY and NO_PROXY).
func proxyFunc(httpProxy, httpsProxy string) (func(*http.Request) (*url.URL, error), error) {
	if httpProxy == "" && httpsProxy == "" {
		return nil, nil
	}
	parse := func(field, raw string) (*url.URL, error) {
		if raw == "" {
			return nil, nil
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
			// The URL may carry a password: say what is wrong without repeating it.
			return nil, fmt.Errorf("s3 store: %s must be a URL such as http://proxy:3128 (http, https or socks5)", field)
		}
		return u, nil
	}
	hp, err := parse("http proxy", httpProxy)
	if err != nil {
		return nil, err
	}
	hsp, err := parse("https proxy", httpsProxy)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (*url.URL, error) {
		if r.URL.Scheme == "https" {
			return hsp, nil
		}
		return hp, nil
	}, nil
}

// redactURL hides a password in a proxy URL for logs; unparsable values are hidden whole.
func redactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid)"
	}
	return u.Redacted()
}

// endpoint validates a configured endpoint URL.
func endpoint(e string) (*string, error) {
	if e == "" {
		return nil, nil
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("s3 store: endpoint %s must be an http:// or https:// URL without credentials", input.Quote(redactURL(e)))
	}
	return aws.String(e), nil
}

func staticCredentials(o S3Options) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)
}

// errRangeNotSatisfiable: a ranged get starting past the object's end.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

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
	case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
		return errors.Join(err, errRangeNotSatisfiable)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return errors.Join(err, ErrNotFound)
	case status == http.StatusForbidden || status == http.StatusUnauthorized || code == "AccessDenied" ||
		code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		return errors.Join(err, ErrDenied)
	}
	return err
}

// rangeTotal reads the object's size from a Content-Range header ("bytes 0-99/1234").
func rangeTotal(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || total == "*" {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}
