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

const selectProject = `SELECT p.resource_id, p.name, p.path, p.metadata, p.configuration, p.remote_enabled,
	p.data_source, b.resource_id, b.name, b.path
	FROM project p JOIN basis b ON b.resource_id = p.basis_id `

// CreateProject inserts p into the basis p.Basis.ResourceId names.
func (s *Store) CreateProject(ctx context.Context, p *vagrant.Project) (*vagrant.Project, error) {
	cols, err := projectColumns(p)
	if err != nil {
		return nil, err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO project (resource_id, basis_id, name, path, metadata, configuration,
		remote_enabled, data_source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		append([]any{p.ResourceId, p.GetBasis().GetResourceId()}, cols...)...)
	if err != nil {
		return nil, writeError(err, p)
	}
	return s.GetProject(ctx, p.ResourceId)
}

// UpdateProject changes project id through update, holding its row for the transaction.
// The basis never changes.
func (s *Store) UpdateProject(ctx context.Context, id string, update func(*vagrant.Project) error) (*vagrant.Project, error) {
	var out *vagrant.Project
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getProject(ctx, tx, byID(id), selectProject+`WHERE p.resource_id = $1 FOR UPDATE OF p`, id)
		if err != nil {
			return err
		}
		if err := update(cur); err != nil {
			return err
		}
		cols, err := projectColumns(cur)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE project SET name = $2, path = $3, metadata = $4, configuration = $5,
			remote_enabled = $6, data_source = $7, updated_at = now() WHERE resource_id = $1`, append([]any{id}, cols...)...)
		if err != nil {
			return writeError(err, cur)
		}
		out, err = getProject(ctx, tx, byID(id), selectProject+`WHERE p.resource_id = $1`, id)
		return err
	})
	return out, err
}

// projectColumns are the stored columns of p after resource_id and basis_id, in table order.
func projectColumns(p *vagrant.Project) ([]any, error) {
	meta, err := metadataJSON(p.Metadata)
	if err != nil {
		return nil, err
	}
	bl, err := blobs(p.Configuration, p.DataSource)
	if err != nil {
		return nil, err
	}
	return []any{p.Name, p.Path, meta, bl[0], p.RemoteEnabled, bl[1]}, nil
}

// GetProject returns project id.
func (s *Store) GetProject(ctx context.Context, id string) (*vagrant.Project, error) {
	return getProject(ctx, s.pool, byID(id), selectProject+`WHERE p.resource_id = $1`, id)
}

// FindProject returns the project of q.BasisID matching q's non-empty Name and Path.
func (s *Store) FindProject(ctx context.Context, q registry.ProjectQuery) (*vagrant.Project, error) {
	return getProject(ctx, s.pool, fmt.Sprintf("name %s and path %s in basis %s", input.Quote(q.Name), input.Quote(q.Path), input.Quote(q.BasisID)),
		selectProject+`WHERE p.basis_id = $1 AND ($2 = '' OR p.name = $2) AND ($3 = '' OR p.path = $3)
		AND ($2 <> '' OR $3 <> '')`, q.BasisID, q.Name, q.Path)
}

// ListProjects returns a reference to every project, oldest first.
func (s *Store) ListProjects(ctx context.Context) ([]*sdk.Ref_Project, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.resource_id, p.name, p.path, b.resource_id, b.name, b.path
		FROM project p JOIN basis b ON b.resource_id = p.basis_id ORDER BY p.resource_id`)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Project, error) {
		p := sdk.Ref_Project{Basis: &sdk.Ref_Basis{}}
		return &p, r.Scan(&p.ResourceId, &p.Name, &p.Path, &p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path)
	})
}

// getProject reads one project (query selects selectProject's columns) with its targets.
func getProject(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Project, error) {
	p := vagrant.Project{Basis: &sdk.Ref_Basis{}}
	var meta, conf, ds []byte
	err := q.QueryRow(ctx, query, args...).Scan(&p.ResourceId, &p.Name, &p.Path, &meta, &conf, &p.RemoteEnabled, &ds,
		&p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path)
	if err != nil {
		return nil, notFound(err, "project", key)
	}
	if p.Metadata, err = metadataSet(meta); err != nil {
		return nil, err
	}
	if p.Configuration, err = unblob[vagrant.Vagrantfile](conf); err != nil {
		return nil, err
	}
	if p.DataSource, err = unblob[vagrant.Job_DataSource](ds); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT resource_id, name FROM target WHERE project_id = $1 ORDER BY resource_id`, p.ResourceId)
	if err != nil {
		return nil, fmt.Errorf("targets of project: %w", err)
	}
	p.Targets, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
		t := sdk.Ref_Target{Project: projectRef(&p)}
		return &t, r.Scan(&t.ResourceId, &t.Name)
	})
	return &p, err
}

// projectRef is the reference to p, with its basis.
func projectRef(p *vagrant.Project) *sdk.Ref_Project {
	b := p.GetBasis()
	return &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path,
		Basis: &sdk.Ref_Basis{ResourceId: b.GetResourceId(), Name: b.GetName(), Path: b.GetPath()}}
}
