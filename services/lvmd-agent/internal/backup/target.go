package backup

import (
	"fmt"
	"log/slog"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Target is where one backup lives: an S3 location (the request's DataSource.S3, every
// field of it) and the key it is encrypted with. Its path names the backup itself: the data
// and the manifest are stored under it, and a restore gives the same path.
type Target struct {
	// S3 reaches the bucket; Prefix is the path's part after the bucket.
	S3 objectstore.S3Options
	// Key encrypts the data (nil: not encrypted).
	Key *encryption.Key
	// Location is "ENDPOINT/BUCKET/PREFIX" for messages and events: no credentials.
	Location string
	// Default: the agent's default store (its own endpoint and credentials).
	Default bool
}

// Ref is where the target is, without credentials, as a job keeps it.
func (t Target) Ref() StoreRef {
	return StoreRef{Endpoint: t.S3.Endpoint, Bucket: t.S3.Bucket, Prefix: t.S3.Prefix, VerifyTLS: !t.S3.InsecureSkipVerify, Default: t.Default}
}

// endpoint is the target's endpoint as people read it (AWS's when it names none).
func (t Target) endpoint() string {
	if t.S3.Endpoint == "" {
		return "https://s3.amazonaws.com"
	}
	return t.S3.Endpoint
}

// LogValue prints the target without credentials or key.
func (t Target) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("location", t.Location), slog.Any("s3", t.S3)}
	if t.Key != nil {
		attrs = append(attrs, slog.String("key_id", t.Key.ID()))
	}
	return slog.GroupValue(attrs...)
}

// open builds the target's object store client (no request is sent yet).
func (t Target) open(partSize int64, concurrency int) (objectstore.Store, error) {
	o := t.S3
	o.PartSize, o.Concurrency = partSize, concurrency
	st, err := objectstore.NewS3(o)
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	return st, nil
}

// Object keys under a backup's path.
const (
	manifestKey = "manifest.json"
	dataKeyBase = "volume.img"
)
