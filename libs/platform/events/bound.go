package events

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Event size bounds. NATS refuses messages over its max_payload (1 MiB by default), and a
// refused message must never reach the outbox: the relay would have to park it. Events carry
// ids, states and short messages; free text copied from a client or a failing command (an
// error that repeats a 1 MB command line) is cut when the event is written.
const (
	// MaxFieldLen bounds each string field of a payload.
	MaxFieldLen = 8 << 10
	// MaxPayload bounds a whole marshalled payload.
	MaxPayload = 256 << 10
	// shortFieldLen is what long strings are cut to when the payload is still too big.
	shortFieldLen = 256
)

// bound marshals m, cutting string fields longer than MaxFieldLen with a marker
// (input.Truncate), and, if the payload is still over MaxPayload, every string longer than
// 256 bytes. m is not modified. A payload that stays too big is an error: the caller's
// transaction fails rather than writing an event that could never be delivered.
func bound(m proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(payload) <= MaxPayload && !hasLongString(m.ProtoReflect(), MaxFieldLen) {
		return payload, nil
	}
	for _, limit := range []int{MaxFieldLen, shortFieldLen} {
		c := proto.Clone(m)
		truncateStrings(c.ProtoReflect(), limit)
		if payload, err = proto.Marshal(c); err != nil {
			return nil, err
		}
		if len(payload) <= MaxPayload {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("events: %s payload is %d bytes after cutting its text; at most %d fit", m.ProtoReflect().Descriptor().FullName(), len(payload), MaxPayload)
}

// hasLongString reports whether any string field (at any depth) is longer than limit.
func hasLongString(m protoreflect.Message, limit int) bool {
	found := false
	walkStrings(m, func(s string) string {
		found = found || len(s) > limit
		return s
	})
	return found
}

// truncateStrings cuts every string field longer than limit, in place.
func truncateStrings(m protoreflect.Message, limit int) {
	walkStrings(m, func(s string) string { return input.Truncate(s, limit) })
}

// walkStrings replaces every string field value s of m (nested messages, lists and map
// values included) with fn(s). The populated fields are collected first: a message must not
// change while Range iterates over it.
func walkStrings(m protoreflect.Message, fn func(string) string) {
	var fields []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		fields = append(fields, fd)
		return true
	})
	for _, fd := range fields {
		v := m.Get(fd)
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for i := range list.Len() {
				if fd.Kind() == protoreflect.StringKind {
					list.Set(i, protoreflect.ValueOfString(fn(list.Get(i).String())))
				} else if fd.Message() != nil {
					walkStrings(list.Get(i).Message(), fn)
				}
			}
		case fd.IsMap():
			mv := m.Mutable(fd).Map()
			var keys []protoreflect.MapKey
			mv.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			for _, k := range keys {
				switch e := mv.Get(k); {
				case fd.MapValue().Kind() == protoreflect.StringKind:
					mv.Set(k, protoreflect.ValueOfString(fn(e.String())))
				case fd.MapValue().Message() != nil:
					walkStrings(e.Message(), fn)
				}
			}
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(fn(v.String())))
		case fd.Message() != nil:
			walkStrings(m.Mutable(fd).Message(), fn)
		}
	}
}
