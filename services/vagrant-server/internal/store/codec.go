package store

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// blob encodes an optional nested message as protobuf bytes: nil (SQL NULL) when unset, so
// that "not set" and "set but empty" survive the round trip. Binary encoding keeps Any
// payloads opaque: their types need not be known here (protojson would need them).
func blob(m proto.Message) ([]byte, error) {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil, nil
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	if b == nil {
		b = []byte{} // set but empty: keep it distinct from NULL
	}
	return b, nil
}

// unblob decodes what blob stored; NULL gives nil.
func unblob[M any, P interface {
	*M
	proto.Message
}](b []byte) (P, error) {
	if b == nil {
		return nil, nil
	}
	m := P(new(M))
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("unmarshal %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return m, nil
}

// metadataJSON encodes custom metadata for a jsonb column (nil: NULL).
func metadataJSON(m *sdk.Args_MetadataSet) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	kv := m.GetMetadata()
	if kv == nil {
		kv = map[string]string{}
	}
	return json.Marshal(kv)
}

// metadataSet decodes a jsonb metadata column.
func metadataSet(b []byte) (*sdk.Args_MetadataSet, error) {
	if b == nil {
		return nil, nil
	}
	var kv map[string]string
	if err := json.Unmarshal(b, &kv); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return &sdk.Args_MetadataSet{Metadata: kv}, nil
}

// blobs encodes several optional messages at once, stopping at the first error.
func blobs(ms ...proto.Message) ([][]byte, error) {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		b, err := blob(m)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
