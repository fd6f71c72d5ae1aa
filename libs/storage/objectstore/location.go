package objectstore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"errors"
	"fmt"
	"regexp"
	"strings"
)

// bucketRE is the relaxed bucket naming rule of S3-compatible servers (Ceph's
// rgw_relaxed_s3_bucket_names, AWS's legacy us-east-1 names): AWS's strict rule (3–63 of
// a-z, 0-9, '.', '-') is a subset, and the server has the last word.
var bucketRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`)

// ValidateBucket checks that a bucket name can be used in a request path.
func ValidateBucket(b string) error {
	if !bucketRE.MatchString(b) {
		return fmt.Errorf("bucket %s is not a valid bucket name (1-255 characters of A-Z, a-z, 0-9, '.', '_', '-')", input.Quote(b))
	}
	return nil
}

// ParseLocation splits an S3 location into bucket and prefix. It accepts
// "s3://bucket/some/prefix" and the bare "bucket/some/prefix" (the prefix is optional; a
// trailing slash is ignored). The prefix must be a valid key (ValidateKey).
func ParseLocation(loc string) (bucket, prefix string, err error) {
	rest := loc
	if scheme, after, ok := strings.Cut(loc, "://"); ok {
		if scheme != "s3" {
			return "", "", fmt.Errorf("location %s: only s3:// URLs (or bucket/prefix) are understood", input.Quote(loc))
		}
		rest = after
	}
	if rest == "" {
		return "", "", errors.New("location is empty: give bucket/prefix or s3://bucket/prefix")
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if err := ValidateBucket(bucket); err != nil {
		return "", "", fmt.Errorf("location %s: %w", input.Quote(loc), err)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("location %s: prefix: %w", input.Quote(loc), err)
		}
	}
	return bucket, prefix, nil
}
