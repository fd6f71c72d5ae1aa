package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

const selectBox = `SELECT resource_id, name, version, provider, directory, metadata, metadata_url, last_update FROM box `

// boxes is the box table.
var boxes = table[*vagrant.Box]{
	byID: selectBox + `WHERE resource_id = $1`, lock: ` FOR UPDATE`,
	insert: `INSERT INTO box (resource_id, name, version, provider, directory, metadata,
		metadata_url, last_update) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
	update: `UPDATE box SET name = $2, version = $3, provider = $4, directory = $5, metadata = $6,
		metadata_url = $7, last_update = $8, updated_at = now() WHERE resource_id = $1`,
	columns: boxColumns,
	read: func(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Box, error) {
		return getBox(q.QueryRow(ctx, query, args...), key)
	},
}

// CreateBox inserts b and returns it as stored.
func (s *Store) CreateBox(ctx context.Context, b *vagrant.Box) (*vagrant.Box, error) {
	return boxes.create(ctx, s.pool, b, b.ResourceId)
}

// UpdateBox changes box id through update, holding its row for the transaction.
func (s *Store) UpdateBox(ctx context.Context, id string, update func(*vagrant.Box) error) (*vagrant.Box, error) {
	return boxes.change(ctx, s.pool, id, inPlace(update))
}

// boxColumns are the stored columns of b after resource_id, in table order.
func boxColumns(b *vagrant.Box) ([]any, error) {
	meta, err := blob(b.Metadata)
	if err != nil {
		return nil, err
	}
	var last *time.Time
	if b.LastUpdate != nil {
		t := b.LastUpdate.AsTime()
		last = &t
	}
	return []any{b.Name, b.Version, b.Provider, b.Directory, meta, b.MetadataUrl, last}, nil
}

// GetBox returns box id.
func (s *Store) GetBox(ctx context.Context, id string) (*vagrant.Box, error) {
	return boxes.get(ctx, s.pool, id)
}

// BoxesNamed returns every version of box name for provider.
func (s *Store) BoxesNamed(ctx context.Context, name, provider string) ([]*vagrant.Box, error) {
	return collect(ctx, s.pool, "select boxes", selectBox+`WHERE name = $1 AND provider = $2 ORDER BY resource_id`,
		func(r pgx.CollectableRow) (*vagrant.Box, error) { return getBox(r, "") }, name, provider)
}

// ListBoxes returns a reference to every box, oldest first.
func (s *Store) ListBoxes(ctx context.Context) ([]*sdk.Ref_Box, error) {
	return collect(ctx, s.pool, "list boxes", `SELECT resource_id, name, version, provider FROM box ORDER BY resource_id`,
		func(r pgx.CollectableRow) (*sdk.Ref_Box, error) {
			var b sdk.Ref_Box
			return &b, r.Scan(&b.ResourceId, &b.Name, &b.Version, &b.Provider)
		})
}

// DeleteBox removes box id (a no-op when it does not exist).
func (s *Store) DeleteBox(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM box WHERE resource_id = $1`, id); err != nil {
		return fmt.Errorf("delete box: %w", err)
	}
	return nil
}

// getBox scans one row of selectBox's columns; key names the box in a *registry.NotFoundError.
func getBox(row pgx.Row, key string) (*vagrant.Box, error) {
	var b vagrant.Box
	var meta []byte
	var last *time.Time
	err := row.Scan(&b.ResourceId, &b.Name, &b.Version, &b.Provider, &b.Directory, &meta, &b.MetadataUrl, &last)
	if err != nil {
		return nil, notFound(err, "box", key)
	}
	if b.Metadata, err = unblob[structpb.Struct](meta); err != nil {
		return nil, err
	}
	if last != nil {
		b.LastUpdate = timestamppb.New(*last)
	}
	return &b, nil
}
