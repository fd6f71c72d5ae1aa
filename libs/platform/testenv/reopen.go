package testenv

import (
	"sync"
	"testing"
)

// Reopenable gives a store conformance suite its factory and its reopen for a store on
// PostgreSQL. open makes a store on the database at url and answers the function that closes
// it (its pool; it may be called twice). factory opens one on a fresh database of the test (DB); reopen closes the
// store it is given, as a restart would, and opens another on the same database. Every store
// is closed when its test ends.
func Reopenable[S comparable](open func(t *testing.T, url string) (S, func())) (factory func(*testing.T) S, reopen func(*testing.T, S) S) {
	type opened struct {
		url   string
		close func()
	}
	var mu sync.Mutex
	stores := map[S]opened{}
	openOn := func(t *testing.T, url string) S {
		t.Helper()
		s, closeStore := open(t, url)
		t.Cleanup(closeStore)
		mu.Lock()
		stores[s] = opened{url, closeStore}
		mu.Unlock()
		return s
	}
	factory = func(t *testing.T) S {
		t.Helper()
		return openOn(t, DB(t).URL)
	}
	reopen = func(t *testing.T, s S) S {
		t.Helper()
		mu.Lock()
		o, ok := stores[s]
		delete(stores, s)
		mu.Unlock()
		if !ok {
			t.Fatal("testenv: reopen of a store the factory did not open")
		}
		o.close()
		return openOn(t, o.url)
	}
	return factory, reopen
}
