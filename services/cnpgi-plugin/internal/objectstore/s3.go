package objectstore

import (
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
// Objects live under Options.Prefix; large or unsized bodies go up as multipart uploads.
type S3 struct {
	client   *s3.Client
	uploader *manager.Uploader
	bucket   string
	prefix   string
	partSize int64
}

var _ Store = (*S3)(nil)

// S3Options configure an S3 store. The credentials are resolved values (never references)
// and never printed: LogValue redacts them.
type S3Options struct {
	// Endpoint is the service URL (https://s3.example.com); empty means AWS's own endpoint.
	Endpoint string
	// Bucket must exist; the store never creates buckets.
	Bucket string
	// Prefix is prepended to every key ("" or "a/b").
	Prefix string
	// Region signs the requests; S3-compatible servers mostly accept any, e.g. us-east-1.
	Region string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY;
	// most self-hosted servers need it.
	PathStyle bool
	// CAPEM are extra PEM certificates to trust besides the system pool (self-signed servers).
	CAPEM []byte
	// AccessKeyID, SecretAccessKey and SessionToken authenticate the requests.
	AccessKeyID, SecretAccessKey, SessionToken string
	// PartSize is the multipart part size in bytes (default 16 MiB, minimum 5 MiB). Bodies of
	// known size up to one part are sent with a single PutObject.
	PartSize int64
	// Concurrency is the number of parts uploaded in parallel (default 4).
	Concurrency int
}

// LogValue prints the options without credentials.
func (o S3Options) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoint", o.Endpoint), slog.String("bucket", o.Bucket),
		slog.String("prefix", o.Prefix), slog.String("region", o.Region),
		slog.Bool("path_style", o.PathStyle), slog.Bool("custom_ca", len(o.CAPEM) > 0),
	)
}

// DefaultRegion signs requests when no region is configured; S3-compatible servers
// mostly accept any region.
const DefaultRegion = "us-east-1"

// Default and minimum multipart sizes; S3 refuses parts under 5 MiB (except the last).
const (
	DefaultPartSize    = 16 << 20
	minPartSize        = 5 << 20
	defaultConcurrency = 4
)

// NewS3 builds the client; it does not contact the server (see Probe-like checks in the
// callers), so a plugin starts even while its object store is briefly unreachable.
func NewS3(o S3Options) (*S3, error) {
	if o.Bucket == "" {
		return nil, errors.New("s3 store: bucket is required")
	}
	if o.AccessKeyID == "" || o.SecretAccessKey == "" {
		return nil, errors.New("s3 store: an access key id and a secret access key are required")
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < minPartSize {
		return nil, fmt.Errorf("s3 store: part size %d is below S3's minimum of 5 MiB", o.PartSize)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = defaultConcurrency
	}
	httpClient, err := newHTTPClient(o.CAPEM)
	if err != nil {
		return nil, err
	}
	client := s3.New(s3.Options{
		Region:       o.Region,
		UsePathStyle: o.PathStyle,
		HTTPClient:   httpClient,
		Credentials:  staticCredentials(o),
		BaseEndpoint: endpoint(o.Endpoint),
		// Checksums only when the API requires them: several S3-compatible servers reject
		// the SDK's default trailing CRC headers. Integrity is still checked end to end: the
		// WAL layer compares SHA-256 of what it stored, gzip and zstd carry their own CRCs.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           5,
	})
	uploader := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = o.PartSize
		u.Concurrency = o.Concurrency
	})
	return &S3{client: client, uploader: uploader, bucket: o.Bucket, prefix: cleanPrefix(o.Prefix), partSize: o.PartSize}, nil
}

func endpoint(e string) *string {
	if e == "" {
		return nil
	}
	return aws.String(e)
}

// Put sends a small seekable body with one PutObject and everything else through the
// multipart uploader. IfAbsent becomes If-None-Match: * on PutObject or on
// CompleteMultipartUpload, so the server refuses to replace an object atomically.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(joinPrefix(s.prefix, key)), Body: r}
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
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(joinPrefix(s.prefix, key))})
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("s3 store: get %s: %w", key, classify(err, false))
	}
	return out.Body, ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Stat sends a HeadObject.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(joinPrefix(s.prefix, key))})
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
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(joinPrefix(s.prefix, key))})
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
				yield(ObjectInfo{}, fmt.Errorf("s3 store: list %s: %w", prefix, classify(err, false)))
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
