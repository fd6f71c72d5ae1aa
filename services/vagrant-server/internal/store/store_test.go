package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry/registrytest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens/keystoretest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// opener opens stores on one test schema; reopening closes the old pool first, as a
// restarted server would.
type opener struct {
	url   string
	mu    sync.Mutex
	close map[registry.Store]func()
}

func (o *opener) open(t *testing.T) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := service.OpenPostgres(ctx, o.url, store.Schema, store.Migrations, jobqueue.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	o.mu.Lock()
	o.close[st] = pool.Close
	o.mu.Unlock()
	t.Cleanup(pool.Close) // idempotent
	return st
}

func (o *opener) reopen(t *testing.T, s registry.Store) registry.Store {
	o.mu.Lock()
	closePool := o.close[s]
	o.mu.Unlock()
	closePool()
	return o.open(t)
}

func TestRegistryConformance(t *testing.T) {
	var mu sync.Mutex
	openers := map[*testing.T]*opener{}
	factory := func(t *testing.T) registry.Store {
		o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
		mu.Lock()
		openers[t] = o
		mu.Unlock()
		return o.open(t)
	}
	reopen := func(t *testing.T, s registry.Store) registry.Store {
		mu.Lock()
		o := openers[t]
		mu.Unlock()
		return o.reopen(t, s)
	}
	registrytest.Run(t, factory, reopen)
}

func TestFirstKeyIsCreatedOnceAcrossConcurrentBootstraps(t *testing.T) {
	t.Parallel()
	o := &opener{url: testenv.DB(t).URL, close: map[registry.Store]func(){}}
	ctx := context.Background()
	stores := []*store.Store{o.open(t), o.open(t)} // two "replicas"
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	for i := range 8 {
		wg.Go(func() {
			key := []byte(strings.Repeat(string(rune('a'+i)), tokens.KeySize))
			created, err := stores[i%2].CreateFirstKey(ctx, tokens.DefaultKeyID, key)
			if err != nil {
				t.Error(err)
				return
			}
			if created {
				mu.Lock()
				winners = append(winners, string(key))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d bootstraps created a key, want exactly 1", len(winners))
	}
	got, err := o.reopen(t, stores[0]).(*store.Store).Key(ctx, tokens.DefaultKeyID)
	if err != nil || string(got) != winners[0] {
		t.Fatalf("stored key after restart = %q, %v; want the winner's", got, err)
	}
	if _, err := stores[1].Key(ctx, "k2"); !errors.Is(err, tokens.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if created, err := stores[1].CreateFirstKey(ctx, "k2", []byte(strings.Repeat("z", tokens.KeySize))); err != nil || created {
		t.Fatalf("a second key was created: %v %v", created, err)
	}
}

// TestKeyStoreConformance runs tokens.KeyStore's suite on Postgres, plain and reopening the
// store (a new pool on the same database) mid-test.
func TestKeyStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (keystoretest.KeyStore, func()) { return openOn(t, url) })
	keystoretest.Run(t, factory, reopen, tokens.ErrUnknownKey)
}

// openOn opens a store on the database at url, migrated as the service does, and the
// function that closes it.
func openOn(t *testing.T, url string) (*store.Store, func()) {
	t.Helper()
	pool, err := service.OpenPostgres(context.Background(), url, store.Schema, store.Migrations, jobqueue.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	return store.New(pool), pool.Close
}
