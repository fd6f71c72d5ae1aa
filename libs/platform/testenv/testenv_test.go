package testenv_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDBGivesIsolatedSchemaAndDropsIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first testenv.Database
	t.Run("inner", func(t *testing.T) {
		first = testenv.DB(t)
		if !regexp.MustCompile(`^t_[a-z0-9_]+_[0-9a-f]{8}$`).MatchString(first.Schema) || len(first.Schema) > 63 {
			t.Fatalf("schema name %q", first.Schema)
		}
		if !strings.Contains(first.URL, "search_path="+first.Schema) {
			t.Fatalf("URL %q does not select the schema", first.URL)
		}
		var current string
		if err := first.Pool.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
			t.Fatal(err)
		}
		if current != first.Schema {
			t.Fatalf("pool search_path selects %q, want %q", current, first.Schema)
		}
		if _, err := first.Pool.Exec(ctx, "CREATE TABLE x (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	other := testenv.DB(t)
	if other.Schema == first.Schema {
		t.Fatal("two calls returned the same schema")
	}
	var exists bool
	if err := other.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", first.Schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("schema %s survived its test", first.Schema)
	}
}

func TestNATSIsJetStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName(t, "S")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = js.DeleteStream(context.Background(), name) }()
	if _, err := js.Publish(ctx, name+".x", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestUniqueName(t *testing.T) {
	t.Parallel()
	a, b := testenv.UniqueName(t, "Stream.X"), testenv.UniqueName(t, "Stream.X")
	if a == b {
		t.Fatal("names repeat")
	}
	if !regexp.MustCompile(`^[a-z0-9_]+$`).MatchString(a) || !strings.HasPrefix(a, "stream_x_testuniquename_") {
		t.Fatalf("name %q", a)
	}
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	got, err := testenv.WithSearchPath("postgres://u@h:5/db?sslmode=disable", "s1")
	if err != nil || got != "postgres://u@h:5/db?search_path=s1&sslmode=disable" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := testenv.WithSearchPath("host=h dbname=db", "s1"); err == nil {
		t.Fatal("keyword/value DSN accepted")
	}
}

// fakeTB records how SkipOrFail stops a test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestSkipOrFail(t *testing.T) {
	t.Setenv("PLINTH_TEST_STRICT", "")
	var f fakeTB
	testenv.SkipOrFail(&f, "no ceph")
	if f.failed != "" || !strings.Contains(f.skipped, "no ceph") || !strings.Contains(f.skipped, "PLINTH_TEST_STRICT=1") {
		t.Fatalf("not strict: skipped %q failed %q", f.skipped, f.failed)
	}
	t.Setenv("PLINTH_TEST_STRICT", "1")
	f = fakeTB{}
	testenv.SkipOrFail(&f, "no ceph")
	if f.skipped != "" || !strings.Contains(f.failed, "no ceph") {
		t.Fatalf("strict: skipped %q failed %q", f.skipped, f.failed)
	}
	if !testenv.Strict() {
		t.Fatal("Strict() false with PLINTH_TEST_STRICT=1")
	}
}
