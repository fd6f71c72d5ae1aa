package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/plinth-dev/plinth/libs/api/plinth/events/v1" // the payloads the outbox names
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/catalogtest"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestConformance runs catalogtest against the Postgres catalog: opened (and migrated) as the
// plugin opens it, and reopened on a new pool — a second start finds the schema migrated.
func TestConformance(t *testing.T) {
	open, reopen := testenv.Reopenable(func(t *testing.T, url string) (*catalogtest.Opened, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, pool, err := catalog.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return &catalogtest.Opened{Catalog: c, History: history.NewReader(pool), Outbox: outbox(pool)}, pool.Close
	})
	catalogtest.Run(t, open, reopen)
}

// outbox reads the payloads in the outbox, oldest first.
func outbox(pool *pgxpool.Pool) func(ctx context.Context) ([]proto.Message, error) {
	return func(ctx context.Context) ([]proto.Message, error) {
		rows, err := pool.Query(ctx, `SELECT type, payload FROM outbox ORDER BY id`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (proto.Message, error) {
			var (
				typ     string
				payload []byte
			)
			if err := r.Scan(&typ, &payload); err != nil {
				return nil, err
			}
			mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(typ))
			if err != nil {
				return nil, fmt.Errorf("outbox type %s: %w", typ, err)
			}
			m := mt.New().Interface()
			return m, proto.Unmarshal(payload, m)
		})
	}
}
