package objectstore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 is a store in an S3-compatible bucket (AWS, Ceph radosgw, MinIO, versitygw, ...).
// Objects live under S3Options.Prefix; large or unsized bodies go up as multipart uploads
// streamed from the reader (parts are buffered in memory, PartSize × Concurrency at most).
type S3 struct {
	client   *s3.Client
	uploader *manager.Uploader
	bucket   string
	prefix   string
	partSize int64
	describe slog.Value
}

var _ Store = (*S3)(nil)

// S3Options configure an S3 store explicitly: every field of an S3 location a caller may
// hold (a configuration file through S3Config, or a request such as lvmd's DataSource.S3).
// The credentials are resolved values and never printed: LogValue leaves them out.
type S3Options struct {
	// Endpoint is the service URL (https://s3.example.com); empty means AWS's own endpoint.
	Endpoint string
	// Bucket must exist; the store never creates buckets.
	Bucket string
	// Prefix is prepended to every key ("" or "a/b"). ParseLocation splits "bucket/prefix".
	Prefix string
	// Region signs the requests; S3-compatible servers mostly accept any (DefaultRegion).
	Region string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY;
	// most self-hosted servers need it.
	PathStyle bool
	// CAPEM are extra PEM certificates to trust besides the system pool (self-signed servers).
	CAPEM []byte
	// InsecureSkipVerify accepts any server certificate (lvmd's verify_tls=false). Only for
	// test endpoints: the credentials then go to whoever answers.
	InsecureSkipVerify bool
	// HTTPProxy is the proxy URL for http:// endpoints, HTTPSProxy for https:// ones. When
	// both are empty the usual HTTP_PROXY/HTTPS_PROXY/NO_PROXY variables apply; when either
	// is set the environment is ignored and an endpoint whose scheme has none goes direct.
	HTTPProxy, HTTPSProxy string
	// AccessKeyID, SecretAccessKey and SessionToken (temporary credentials) authenticate the
	// requests.
	AccessKeyID, SecretAccessKey, SessionToken string
	// PartSize is the multipart part size in bytes (default 16 MiB, minimum 5 MiB). Bodies of
	// known size up to one part are sent with a single PutObject.
	PartSize int64
	// Concurrency is the number of parts uploaded in parallel (default 4).
	Concurrency int
}

// LogValue prints the options without credentials (proxy passwords redacted too).
func (o S3Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", o.Endpoint), slog.String("bucket", o.Bucket),
		slog.String("prefix", o.Prefix), slog.String("region", o.Region),
		slog.Bool("path_style", o.PathStyle), slog.Bool("custom_ca", len(o.CAPEM) > 0),
		slog.Bool("verify_tls", !o.InsecureSkipVerify),
		slog.String("http_proxy", redactURL(o.HTTPProxy)), slog.String("https_proxy", redactURL(o.HTTPSProxy)),
		slog.Bool("session_token", o.SessionToken != ""),
	)
}

// DefaultRegion signs requests when no region is configured; S3-compatible servers
// mostly accept any region.
const DefaultRegion = "us-east-1"

// Default and minimum multipart sizes; S3 refuses parts under 5 MiB (except the last).
const (
	DefaultPartSize    = 16 << 20
	MinPartSize        = 5 << 20
	defaultConcurrency = 4
)

// NewS3 builds the client; it does not contact the server, so a service starts even while
// its object store is briefly unreachable. Errors never quote a credential.
func NewS3(o S3Options) (*S3, error) {
	if o.Bucket == "" {
		return nil, errors.New("s3 store: bucket is required")
	}
	if err := ValidateBucket(o.Bucket); err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	if o.AccessKeyID == "" || o.SecretAccessKey == "" {
		return nil, errors.New("s3 store: an access key id and a secret access key are required")
	}
	if p := CleanPrefix(o.Prefix); p != "" {
		if err := ValidateKey(p); err != nil {
			return nil, fmt.Errorf("s3 store: prefix: %w", err)
		}
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < MinPartSize {
		return nil, fmt.Errorf("s3 store: part size %d is below S3's minimum of 5 MiB", o.PartSize)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = defaultConcurrency
	}
	ep, err := endpoint(o.Endpoint)
	if err != nil {
		return nil, err
	}
	httpClient, err := newHTTPClient(o)
	if err != nil {
		return nil, err
	}
	client := s3.New(s3.Options{
		Region:       o.Region,
		UsePathStyle: o.PathStyle,
		HTTPClient:   httpClient,
		Credentials:  staticCredentials(o),
		BaseEndpoint: ep,
		// Checksums only when the API requires them: several S3-compatible servers reject
		// the SDK's default trailing CRC headers. Callers check integrity end to end
		// (SHA-256 of what they stored, the compressors' own CRCs, authenticated encryption).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           5,
	})
	uploader := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = o.PartSize
		u.Concurrency = o.Concurrency
	})
	return &S3{client: client, uploader: uploader, bucket: o.Bucket, prefix: CleanPrefix(o.Prefix),
		partSize: o.PartSize, describe: o.LogValue()}, nil
}

// LogValue describes the store without credentials.
func (s *S3) LogValue() slog.Value { return s.describe }

func (s *S3) key(key string) *string { return aws.String(joinPrefix(s.prefix, key)) }

// Put sends a small seekable body with one PutObject and everything else through the
// multipart uploader, which reads r as it uploads. IfAbsent becomes If-None-Match: * on
// PutObject or on CompleteMultipartUpload, so the server refuses to replace an object
// atomically.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key), Body: r}
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	var err error
	if rs, ok := r.(io.ReadSeeker); ok && opts.Size >= 0 && opts.Size <= s.partSize {
		in.ContentLength = aws.Int64(opts.Size)
		in.Body = rs
		_, err = s.client.PutObject(ctx, in)
	} else {
		_, err = s.uploader.Upload(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("s3 store: put %s: %w", key, classify(err, true))
	}
	return nil
}

// Get streams the object's body.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	return s.get(ctx, key, "")
}

// GetRange sends a ranged GetObject (Range: bytes=offset-end).
func (s *S3) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, ObjectInfo, error) {
	if offset < 0 {
		return nil, ObjectInfo{}, fmt.Errorf("s3 store: get %s: negative offset %d", key, offset)
	}
	if length == 0 {
		info, err := s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	rng := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 {
		rng += fmt.Sprint(offset + length - 1)
	}
	r, info, err := s.get(ctx, key, rng)
	if errors.Is(err, errRangeNotSatisfiable) {
		// A range past the end: nothing to read, as from a file.
		info, err = s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	return r, info, err
}

func (s *S3) get(ctx context.Context, key, rng string) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("s3 store: get %s: %w", key, classify(err, false))
	}
	size := aws.ToInt64(out.ContentLength)
	if total, ok := rangeTotal(aws.ToString(out.ContentRange)); ok {
		size = total
	}
	return out.Body, ObjectInfo{Key: key, Size: size, ModTime: aws.ToTime(out.LastModified)}, nil
}

// Stat sends a HeadObject.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key)})
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("s3 store: stat %s: %w", key, classify(err, false))
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Delete sends a DeleteObject; S3 answers success for missing keys too.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: s.key(key)})
	if err != nil && !errors.Is(classify(err, false), ErrNotFound) {
		return fmt.Errorf("s3 store: delete %s: %w", key, classify(err, false))
	}
	return nil
}

// List pages through ListObjectsV2.
func (s *S3) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		full := joinPrefix(s.prefix, prefix)
		if prefix == "" && s.prefix != "" {
			full = s.prefix + "/"
		}
		strip := ""
		if s.prefix != "" {
			strip = s.prefix + "/"
		}
		pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(full)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(ObjectInfo{}, fmt.Errorf("s3 store: list %s: %w", input.Quote(prefix), classify(err, false)))
				return
			}
			for _, o := range page.Contents {
				key, ok := strings.CutPrefix(aws.ToString(o.Key), strip)
				if !ok {
					continue
				}
				if !yield(ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}, nil) {
					return
				}
			}
		}
	}
}
