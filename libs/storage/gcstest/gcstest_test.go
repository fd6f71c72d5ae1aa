package gcstest

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestStartAndBucket: the server answers the JSON API and a created bucket exists there.
func TestStartAndBucket(t *testing.T) {
	srv := Start(t)
	b := srv.Bucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		bucket string
		want   int
	}{{b, http.StatusOK}, {"no-such-bucket", http.StatusNotFound}} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.Endpoint+"/storage/v1/b/"+c.bucket, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("GET bucket %s: %s, want %d", c.bucket, res.Status, c.want)
		}
	}
	if srv.Bucket(t) == b {
		t.Fatal("two buckets of one test share a name")
	}
}
