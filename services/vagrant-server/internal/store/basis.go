package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

const selectBasis = `SELECT resource_id, name, path, metadata, configuration, remote_enabled, data_source FROM basis `

// bases is the basis table.
var bases = table[*vagrant.Basis]{
	byID: selectBasis + `WHERE resource_id = $1`, lock: ` FOR UPDATE`,
	insert: `INSERT INTO basis (resource_id, name, path, metadata, configuration, remote_enabled, data_source)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
	update: `UPDATE basis SET name = $2, path = $3, metadata = $4, configuration = $5,
		remote_enabled = $6, data_source = $7, updated_at = now() WHERE resource_id = $1`,
	columns: func(b *vagrant.Basis) ([]any, error) { return basisPlace(b).columns() },
	read:    getBasis,
}

// CreateBasis inserts b and returns it as stored.
func (s *Store) CreateBasis(ctx context.Context, b *vagrant.Basis) (*vagrant.Basis, error) {
	return bases.create(ctx, s.pool, b, b.ResourceId)
}

// UpdateBasis changes basis id through update, holding its row for the transaction.
func (s *Store) UpdateBasis(ctx context.Context, id string, update func(*vagrant.Basis) error) (*vagrant.Basis, error) {
	return bases.change(ctx, s.pool, id, inPlace(update))
}

// GetBasis returns basis id.
func (s *Store) GetBasis(ctx context.Context, id string) (*vagrant.Basis, error) {
	return bases.get(ctx, s.pool, id)
}

// FindBasis returns the basis matching every non-empty field of q.
func (s *Store) FindBasis(ctx context.Context, q registry.BasisQuery) (*vagrant.Basis, error) {
	return getBasis(ctx, s.pool, quoted("name %s and path %s", q.Name, q.Path),
		selectBasis+`WHERE ($1 = '' OR name = $1) AND ($2 = '' OR path = $2) AND ($1 <> '' OR $2 <> '')`, q.Name, q.Path)
}

// ListBasis returns a reference to every basis, oldest first.
func (s *Store) ListBasis(ctx context.Context) ([]*sdk.Ref_Basis, error) {
	return collect(ctx, s.pool, "list basis", `SELECT resource_id, name, path FROM basis ORDER BY resource_id`,
		func(r pgx.CollectableRow) (*sdk.Ref_Basis, error) {
			var b sdk.Ref_Basis
			return &b, r.Scan(&b.ResourceId, &b.Name, &b.Path)
		})
}

// getBasis reads one basis (query selects selectBasis's columns) with its projects.
func getBasis(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Basis, error) {
	var b vagrant.Basis
	pl := basisPlace(&b)
	if err := q.QueryRow(ctx, query, args...).Scan(append([]any{&b.ResourceId}, pl.scan()...)...); err != nil {
		return nil, notFound(err, "basis", key)
	}
	if err := pl.decode(); err != nil {
		return nil, err
	}
	var err error
	b.Projects, err = collect(ctx, q, "projects of basis", `SELECT resource_id, name, path FROM project WHERE basis_id = $1
		ORDER BY resource_id`, func(r pgx.CollectableRow) (*sdk.Ref_Project, error) {
		p := sdk.Ref_Project{Basis: basisRef(&b)}
		return &p, r.Scan(&p.ResourceId, &p.Name, &p.Path)
	}, b.ResourceId)
	return &b, err
}

func basisRef(b *vagrant.Basis) *sdk.Ref_Basis {
	return &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
}
