package objectstore_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

func TestS3ErrorsSayWhatIsWrong(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	open := func(bucket, secret string) objectstore.Store {
		st, err := objectstore.NewS3(objectstore.S3Options{
			Endpoint: srv.Endpoint, Bucket: bucket, PathStyle: true, AccessKeyID: srv.AccessKeyID, SecretAccessKey: secret,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	ctx := context.Background()
	_, err := open(bucket, "wrong-secret-value").Stat(ctx, "x")
	if !errors.Is(err, objectstore.ErrDenied) || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("wrong secret: %v, want ErrDenied without the secret", err)
	}
	err = open("no-such-bucket", srv.SecretAccessKey).Put(ctx, "x", strings.NewReader("x"), objectstore.PutOptions{Size: 1})
	if !errors.Is(err, objectstore.ErrBucketMissing) {
		t.Fatalf("missing bucket: %v, want ErrBucketMissing", err)
	}
	bad := []objectstore.S3Options{
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", CAPEM: []byte("junk")},
		{Bucket: "b", AccessKeyID: "a"},
		{Bucket: "bad/bucket", AccessKeyID: "a", SecretAccessKey: "s"},
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: "ftp://x"},
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", Endpoint: "http://user:endpoint-password@x"},
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", HTTPSProxy: "::proxy-password"},
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", PartSize: 1 << 20},
		{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s", Prefix: "a//b"},
	}
	for i, o := range bad {
		_, err := objectstore.NewS3(o)
		if err == nil {
			t.Errorf("options %d accepted", i)
		} else if strings.Contains(err.Error(), "password") {
			t.Errorf("options %d: the error shows a password: %v", i, err)
		}
	}
}

// TestS3TLSAndProxies runs the store through a TLS front of versitygw, as lvmd's
// DataSource.S3 may ask (verify_tls, a CA, http_proxy, https_proxy).
func TestS3TLSAndProxies(t *testing.T) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	backend, _ := url.Parse(srv.Endpoint)
	front := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	defer front.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})

	roundTrip := func(o objectstore.S3Options) error {
		o.Bucket, o.PathStyle, o.AccessKeyID, o.SecretAccessKey = bucket, true, srv.AccessKeyID, srv.SecretAccessKey
		st, err := objectstore.NewS3(o)
		if err != nil {
			return err
		}
		ctx := context.Background()
		if err := st.Put(ctx, "tls/obj", bytes.NewReader([]byte("payload")), objectstore.PutOptions{Size: 7}); err != nil {
			return err
		}
		r, _, err := st.Get(ctx, "tls/obj")
		if err != nil {
			return err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err == nil && string(b) != "payload" {
			err = errors.New("wrong bytes")
		}
		return err
	}
	if err := roundTrip(objectstore.S3Options{Endpoint: front.URL}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate was accepted: %v", err)
	}
	if err := roundTrip(objectstore.S3Options{Endpoint: front.URL, InsecureSkipVerify: true}); err != nil {
		t.Fatalf("verify_tls=false: %v", err)
	}
	if err := roundTrip(objectstore.S3Options{Endpoint: front.URL, CAPEM: caPEM}); err != nil {
		t.Fatalf("with the server's CA: %v", err)
	}

	// A forward proxy that counts what it carries: plain requests for http:// endpoints,
	// CONNECT tunnels for https:// ones.
	var plain, tunnels atomic.Int32
	proxy := httptest.NewServer(forwardProxy(&plain, &tunnels))
	defer proxy.Close()
	if err := roundTrip(objectstore.S3Options{Endpoint: srv.Endpoint, HTTPProxy: proxy.URL}); err != nil {
		t.Fatalf("through http_proxy: %v", err)
	}
	if plain.Load() == 0 {
		t.Fatal("http_proxy was not used for an http:// endpoint")
	}
	if err := roundTrip(objectstore.S3Options{Endpoint: front.URL, CAPEM: caPEM, HTTPSProxy: proxy.URL}); err != nil {
		t.Fatalf("through https_proxy: %v", err)
	}
	if tunnels.Load() == 0 {
		t.Fatal("https_proxy was not used for an https:// endpoint")
	}
	before := plain.Load()
	if err := roundTrip(objectstore.S3Options{Endpoint: srv.Endpoint, HTTPSProxy: proxy.URL}); err != nil {
		t.Fatalf("http endpoint with only https_proxy: %v", err)
	}
	if plain.Load() != before {
		t.Fatal("https_proxy was used for an http:// endpoint")
	}
}

func forwardProxy(plain, tunnels *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			tunnels.Add(1)
			tunnel(w, r)
			return
		}
		plain.Add(1)
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func TestS3OptionsNeverLogSecrets(t *testing.T) {
	o := objectstore.S3Options{
		Endpoint: "https://s3.example.com", Bucket: "b", AccessKeyID: "the-access-key-id",
		SecretAccessKey: "the-secret-key", SessionToken: "the-session-token",
		HTTPSProxy: "http://user:the-proxy-password@proxy:3128",
	}
	st, err := objectstore.NewS3(o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	slog.New(slog.NewJSONHandler(&out, nil)).Info("store", "options", o, "store", st)
	for _, s := range []string{"the-access-key-id", "the-secret-key", "the-session-token", "the-proxy-password"} {
		if strings.Contains(out.String(), s) {
			t.Fatalf("%s in the log: %s", s, out.String())
		}
	}
	if !strings.Contains(out.String(), `"bucket":"b"`) || !strings.Contains(out.String(), "proxy:3128") {
		t.Fatalf("the description lacks the bucket or the proxy: %s", out.String())
	}
}
