package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

const selectBasis = `SELECT resource_id, name, path, metadata, configuration, remote_enabled, data_source FROM basis `

// CreateBasis inserts b and returns it as stored.
func (s *Store) CreateBasis(ctx context.Context, b *vagrant.Basis) (*vagrant.Basis, error) {
	cols, err := basisColumns(b)
	if err != nil {
		return nil, err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO basis (resource_id, name, path, metadata, configuration, remote_enabled, data_source)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, append([]any{b.ResourceId}, cols...)...)
	if err != nil {
		return nil, writeError(err, b)
	}
	return s.GetBasis(ctx, b.ResourceId)
}

// UpdateBasis changes basis id through update, holding its row for the transaction.
func (s *Store) UpdateBasis(ctx context.Context, id string, update func(*vagrant.Basis) error) (*vagrant.Basis, error) {
	var out *vagrant.Basis
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getBasis(ctx, tx, byID(id), selectBasis+`WHERE resource_id = $1 FOR UPDATE`, id)
		if err != nil {
			return err
		}
		if err := update(cur); err != nil {
			return err
		}
		cols, err := basisColumns(cur)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE basis SET name = $2, path = $3, metadata = $4, configuration = $5,
			remote_enabled = $6, data_source = $7, updated_at = now() WHERE resource_id = $1`, append([]any{id}, cols...)...)
		if err != nil {
			return writeError(err, cur)
		}
		out, err = getBasis(ctx, tx, byID(id), selectBasis+`WHERE resource_id = $1`, id)
		return err
	})
	return out, err
}

// basisColumns are the stored columns of b after resource_id, in table order.
func basisColumns(b *vagrant.Basis) ([]any, error) {
	meta, err := metadataJSON(b.Metadata)
	if err != nil {
		return nil, err
	}
	bl, err := blobs(b.Configuration, b.DataSource)
	if err != nil {
		return nil, err
	}
	return []any{b.Name, b.Path, meta, bl[0], b.RemoteEnabled, bl[1]}, nil
}

// GetBasis returns basis id.
func (s *Store) GetBasis(ctx context.Context, id string) (*vagrant.Basis, error) {
	return getBasis(ctx, s.pool, byID(id), selectBasis+`WHERE resource_id = $1`, id)
}

// FindBasis returns the basis matching every non-empty field of q.
func (s *Store) FindBasis(ctx context.Context, q registry.BasisQuery) (*vagrant.Basis, error) {
	return getBasis(ctx, s.pool, fmt.Sprintf("name %s and path %s", input.Quote(q.Name), input.Quote(q.Path)),
		selectBasis+`WHERE ($1 = '' OR name = $1) AND ($2 = '' OR path = $2) AND ($1 <> '' OR $2 <> '')`, q.Name, q.Path)
}

// ListBasis returns a reference to every basis, oldest first.
func (s *Store) ListBasis(ctx context.Context) ([]*sdk.Ref_Basis, error) {
	rows, err := s.pool.Query(ctx, `SELECT resource_id, name, path FROM basis ORDER BY resource_id`)
	if err != nil {
		return nil, fmt.Errorf("list basis: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Basis, error) {
		var b sdk.Ref_Basis
		return &b, r.Scan(&b.ResourceId, &b.Name, &b.Path)
	})
}

// getBasis reads one basis (query selects selectBasis's columns) with its projects.
func getBasis(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Basis, error) {
	var b vagrant.Basis
	var meta, conf, ds []byte
	err := q.QueryRow(ctx, query, args...).Scan(&b.ResourceId, &b.Name, &b.Path, &meta, &conf, &b.RemoteEnabled, &ds)
	if err != nil {
		return nil, notFound(err, "basis", key)
	}
	if b.Metadata, err = metadataSet(meta); err != nil {
		return nil, err
	}
	if b.Configuration, err = unblob[vagrant.Vagrantfile](conf); err != nil {
		return nil, err
	}
	if b.DataSource, err = unblob[vagrant.Job_DataSource](ds); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT resource_id, name, path FROM project WHERE basis_id = $1 ORDER BY resource_id`, b.ResourceId)
	if err != nil {
		return nil, fmt.Errorf("projects of basis: %w", err)
	}
	b.Projects, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Project, error) {
		p := sdk.Ref_Project{Basis: basisRef(&b)}
		return &p, r.Scan(&p.ResourceId, &p.Name, &p.Path)
	})
	return &b, err
}

func basisRef(b *vagrant.Basis) *sdk.Ref_Basis {
	return &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
}
