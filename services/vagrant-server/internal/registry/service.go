package registry

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Service is the registry's use cases: the Upsert/Get/Find/List/Delete calls of the Vagrant
// API, validated and resolved here and persisted through the Store.
type Service struct {
	store Store
	now   func() time.Time
	ids   *ulid.LockedMonotonicReader
}

// Options configure a Service.
type Options struct {
	Now func() time.Time // nil: time.Now
}

// NewService returns the registry over store.
func NewService(store Store, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	// crypto/rand entropy, as upstream: ids from several replicas must never collide.
	// Monotonic within a millisecond, so ids also sort in creation order in-process.
	ids := &ulid.LockedMonotonicReader{MonotonicReader: ulid.Monotonic(rand.Reader, 0)}
	return &Service{store: store, now: o.Now, ids: ids}
}

// byID reads the resource id names with get; an empty id is the client's mistake, named by
// field (every Get call of the API takes a resource_id alone).
func byID[M any](ctx context.Context, field, id string, get func(context.Context, string) (M, error)) (M, error) {
	if id == "" {
		var none M
		return none, Invalid(field, "required")
	}
	return get(ctx, id)
}

// newID returns a fresh ULID resource id.
func (s *Service) newID() (string, error) {
	id, err := ulid.New(ulid.Timestamp(s.now()), s.ids)
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// overlay copies every field set in src onto dst, replacing (not merging) what was there:
// an upsert changes the fields the client sent and keeps the ones it left at their zero
// value, as upstream's upsert does.
func overlay(dst, src proto.Message) {
	d := dst.ProtoReflect()
	proto.Clone(src).ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		d.Set(fd, v)
		return true
	})
}
