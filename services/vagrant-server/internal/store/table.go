package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// table is one registry resource's table (basis, project, target, box), for what they all
// do alike: read a row by resource_id, insert one and read it back, and rewrite one under
// its row lock. A resource's file says only what differs: its statements, its columns and
// how it reads a row.
type table[M proto.Message] struct {
	// byID selects the row whose resource_id is $1, as read expects; lock is byID's suffix
	// that holds the row (FOR UPDATE, OF the resource's own table in a join).
	byID, lock string
	// insert writes a new row: resource_id, the parent's resource_id when the resource has
	// a parent, then columns. update rewrites the row whose resource_id is $1 from columns
	// ($2…).
	insert, update string
	// columns are m's stored columns after resource_id (and its parent's), in table order.
	columns func(m M) ([]any, error)
	// read reads the one row query selects; key names it in a *registry.NotFoundError.
	read func(ctx context.Context, q querier, key, query string, args ...any) (M, error)
}

// get returns the row id.
func (t table[M]) get(ctx context.Context, q querier, id string) (M, error) {
	return t.read(ctx, q, byID(id), t.byID, id)
}

// create inserts m, whose resource_id is id (and parent its parent's, for a resource that
// has one), through q and reads it back.
func (t table[M]) create(ctx context.Context, q querier, m M, id string, parent ...any) (M, error) {
	var zero M
	cols, err := t.columns(m)
	if err != nil {
		return zero, err
	}
	if _, err := q.Exec(ctx, t.insert, append(append([]any{id}, parent...), cols...)...); err != nil {
		return zero, writeError(err, m)
	}
	return t.get(ctx, q, id)
}

// change loads row id holding it, lets change turn it into what is to be stored (change may
// also write in tx, e.g. the change's events), writes that and reads it back, in one
// transaction, so that concurrent upserts never lose each other's fields. change's error
// is returned unchanged and nothing is written.
func (t table[M]) change(ctx context.Context, pool *pgxpool.Pool, id string, change func(tx pgx.Tx, before M) (M, error)) (M, error) {
	var out M
	err := pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		before, err := t.read(ctx, tx, byID(id), t.byID+t.lock, id)
		if err != nil {
			return err
		}
		after, err := change(tx, before)
		if err != nil {
			return err
		}
		cols, err := t.columns(after)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, t.update, append([]any{id}, cols...)...); err != nil {
			return writeError(err, after)
		}
		out, err = t.get(ctx, tx, id)
		return err
	})
	return out, err
}

// inPlace is a change made by update on the row as loaded (the registry's UpdateBasis,
// UpdateProject and UpdateBox callbacks).
func inPlace[M proto.Message](update func(M) error) func(pgx.Tx, M) (M, error) {
	return func(_ pgx.Tx, m M) (M, error) { return m, update(m) }
}

// collect reads every row query selects with args, as scan makes it: a list, or the
// references to a row's children (a basis's projects, a project's targets, a target's
// subtargets). what names the rows in an error.
func collect[R any](ctx context.Context, q querier, what, query string, scan pgx.RowToFunc[R], args ...any) ([]R, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return pgx.CollectRows(rows, scan)
}

// place points at what a basis and a project both are, stored in the same columns (name,
// path, metadata, configuration, remote_enabled, data_source): a named directory with its
// Vagrantfile, metadata and data source.
type place struct {
	name, path    *string
	metadata      **sdk.Args_MetadataSet
	configuration **vagrant.Vagrantfile
	remoteEnabled *bool
	dataSource    **vagrant.Job_DataSource
	// meta, conf and ds receive the stored forms a read scans (see scan).
	meta, conf, ds []byte
}

func basisPlace(b *vagrant.Basis) *place {
	return &place{name: &b.Name, path: &b.Path, metadata: &b.Metadata, configuration: &b.Configuration,
		remoteEnabled: &b.RemoteEnabled, dataSource: &b.DataSource}
}

func projectPlace(p *vagrant.Project) *place {
	return &place{name: &p.Name, path: &p.Path, metadata: &p.Metadata, configuration: &p.Configuration,
		remoteEnabled: &p.RemoteEnabled, dataSource: &p.DataSource}
}

// columns are the place's stored columns, in table order.
func (p *place) columns() ([]any, error) {
	meta, err := metadataJSON(*p.metadata)
	if err != nil {
		return nil, err
	}
	bl, err := blobs(*p.configuration, *p.dataSource)
	if err != nil {
		return nil, err
	}
	return []any{*p.name, *p.path, meta, bl[0], *p.remoteEnabled, bl[1]}, nil
}

// scan are the destinations of the place's columns in a row; decode once scanned.
func (p *place) scan() []any {
	return []any{p.name, p.path, &p.meta, &p.conf, p.remoteEnabled, &p.ds}
}

// decode sets the fields whose stored forms scan read.
func (p *place) decode() (err error) {
	if *p.metadata, err = metadataSet(p.meta); err != nil {
		return err
	}
	if *p.configuration, err = unblob[vagrant.Vagrantfile](p.conf); err != nil {
		return err
	}
	*p.dataSource, err = unblob[vagrant.Job_DataSource](p.ds)
	return err
}

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
