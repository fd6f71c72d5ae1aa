package gcs

import (
	"context"
	"errors"
	"net/http"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// errRangeNotSatisfiable: a ranged read starting past the object's end.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

// classify adds the store's sentinels to an SDK error. put says whether the request was a
// conditional write, where 412 means another object already holds the key. key names the
// object of a failed object request ("" for a listing).
func (s *Store) classify(ctx context.Context, err error, key string, put bool) error {
	if cerr := ctx.Err(); cerr != nil {
		// The caller's deadline or cancellation, whatever the SDK made of it.
		if !errors.Is(err, cerr) {
			err = errors.Join(err, cerr)
		}
		return err
	}
	switch c := classifyStatus(err); {
	case errors.Is(c, objectstore.ErrExists) && !put:
		return err
	case errors.Is(c, objectstore.ErrNotFound) && key != "":
		return s.whichNotFound(ctx, err)
	default:
		return c
	}
}

// classifyStatus maps what the error says by itself: status codes and the SDK's sentinels.
func classifyStatus(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return errors.Join(err, objectstore.ErrBucketMissing)
	}
	if errors.Is(err, storage.ErrObjectNotExist) {
		return errors.Join(err, objectstore.ErrNotFound)
	}
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Response != nil && ae.Response.StatusCode >= 400 && ae.Response.StatusCode < 500 {
		// The token endpoint refused the credentials (revoked key, unknown account).
		return errors.Join(err, objectstore.ErrDenied)
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return err
	}
	switch ge.Code {
	case http.StatusPreconditionFailed:
		return errors.Join(err, objectstore.ErrExists)
	case http.StatusRequestedRangeNotSatisfiable:
		return errors.Join(err, errRangeNotSatisfiable)
	case http.StatusNotFound:
		return errors.Join(err, objectstore.ErrNotFound)
	case http.StatusUnauthorized, http.StatusForbidden:
		return errors.Join(err, objectstore.ErrDenied)
	}
	return err
}

// whichNotFound tells a missing object from a missing bucket: object requests answer 404
// for both (fake-gcs-server and other emulators say no more than "Not Found"), so a listing
// of the bucket, which needs only the objects.list permission a reader has anyway, decides.
func (s *Store) whichNotFound(ctx context.Context, err error) error {
	q := &storage.Query{Prefix: s.prefix}
	_, lerr := s.bucket.Objects(ctx, q).Next()
	if errors.Is(lerr, storage.ErrBucketNotExist) {
		return errors.Join(err, objectstore.ErrBucketMissing)
	}
	return errors.Join(err, objectstore.ErrNotFound)
}
