package objectstore_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

func TestParseLocation(t *testing.T) {
	ok := []struct{ in, bucket, prefix string }{
		{"backups", "backups", ""},
		{"backups/", "backups", ""},
		{"backups/node-1/lv", "backups", "node-1/lv"},
		{"s3://backups/node-1/lv/", "backups", "node-1/lv"},
		{"s3://backups", "backups", ""},
	}
	for _, c := range ok {
		b, p, err := objectstore.ParseLocation(c.in)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseLocation(%q) = %q %q %v", c.in, b, p, err)
		}
	}
	for _, in := range []string{"", "s3://", "http://b/p", "b//p", "/b", "b/../p", "b/p\x00", "s3://" + strings.Repeat("x", 300)} {
		_, _, err := objectstore.ParseLocation(in)
		if err == nil {
			t.Errorf("ParseLocation(%q) accepted", in)
		} else if len(err.Error()) > 300 {
			t.Errorf("ParseLocation: error of %d bytes", len(err.Error()))
		}
	}
}
