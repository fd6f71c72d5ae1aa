package objectstore_test

import (
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/storetest"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

// posixStore opens a fresh, empty POSIX store.
func posixStore(t *testing.T) objectstore.Store {
	st, err := objectstore.NewPOSIX(filepath.Join(t.TempDir(), "store"), false)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// s3Store returns a factory of fresh stores, each in a new bucket of srv.
func s3Store(srv *s3test.Server, prefix string) func(t *testing.T) objectstore.Store {
	return func(t *testing.T) objectstore.Store {
		st, err := objectstore.NewS3(objectstore.S3Options{
			Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), Prefix: prefix, PathStyle: true,
			AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey, PartSize: 5 << 20,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// TestConformance runs one suite against every store: what the WAL and backup code relies
// on must hold for S3 (a real versitygw) and POSIX alike.
func TestConformance(t *testing.T) {
	t.Run("posix", func(t *testing.T) { storetest.Suite(t, posixStore) })
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		storetest.Suite(t, s3Store(srv, ""))
		t.Run("with-prefix", func(t *testing.T) { storetest.Suite(t, s3Store(srv, "clusters/prod")) })
	})
}
