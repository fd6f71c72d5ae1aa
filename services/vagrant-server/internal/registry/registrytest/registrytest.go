// Package registrytest is the conformance suite every registry.Store implementation must
// pass (after Waypoint's statetest): a table of behaviours, each run twice — once on one
// store, once reopening the store mid-test, so that nothing a behaviour relies on lives only
// in a process.
package registrytest

import (
	"errors"
	"testing"

	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) registry.Store

// Reopen returns a fresh store on the same data as s, as a restarted (or another) replica
// would have.
type Reopen = func(t *testing.T, s registry.Store) registry.Store

// StoreTest is one behaviour's run against one store: the test, its context, the store under
// test, and Restart, which swaps the store for one reopened on the same data.
type StoreTest = testenv.StoreRun[registry.Store]

// behaviour is one row of the conformance table.
type behaviour = testenv.Case[*StoreTest]

// behaviours is the conformance table.
func behaviours() []behaviour {
	var all []behaviour
	for _, group := range [][]behaviour{basisBehaviours(), projectBehaviours(), targetBehaviours(), boxBehaviours()} {
		all = append(all, group...)
	}
	return all
}

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, behaviours(), factory, reopen)
}

// id returns a fresh resource id, as the registry service assigns.
func id() string { return ulid.Make().String() }

// equal fails the test when got and want differ as protobuf messages.
func equal(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Fatalf("%s differs (-want +got):\n%s", what, diff)
	}
}

// notFound requires a *registry.NotFoundError.
func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("%s: %v, want not found", what, err)
	}
}

// precondition requires a *registry.PreconditionError on field.
func precondition(t *testing.T, what string, err error, field string) {
	t.Helper()
	var pe *registry.PreconditionError
	if !errors.As(err, &pe) || pe.Field != field {
		t.Fatalf("%s: %v, want a precondition error on %s", what, err, field)
	}
}
