package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

const selectProject = `SELECT p.resource_id, p.name, p.path, p.metadata, p.configuration, p.remote_enabled,
	p.data_source, b.resource_id, b.name, b.path
	FROM project p JOIN basis b ON b.resource_id = p.basis_id `

// projects is the project table.
var projects = table[*vagrant.Project]{
	byID: selectProject + `WHERE p.resource_id = $1`, lock: ` FOR UPDATE OF p`,
	insert: `INSERT INTO project (resource_id, basis_id, name, path, metadata, configuration,
		remote_enabled, data_source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
	update: `UPDATE project SET name = $2, path = $3, metadata = $4, configuration = $5,
		remote_enabled = $6, data_source = $7, updated_at = now() WHERE resource_id = $1`,
	columns: func(p *vagrant.Project) ([]any, error) { return projectPlace(p).columns() },
	read:    getProject,
}

// CreateProject inserts p into the basis p.Basis.ResourceId names.
func (s *Store) CreateProject(ctx context.Context, p *vagrant.Project) (*vagrant.Project, error) {
	return projects.create(ctx, s.pool, p, p.ResourceId, p.GetBasis().GetResourceId())
}

// UpdateProject changes project id through update, holding its row for the transaction.
// The basis never changes.
func (s *Store) UpdateProject(ctx context.Context, id string, update func(*vagrant.Project) error) (*vagrant.Project, error) {
	return projects.change(ctx, s.pool, id, inPlace(update))
}

// GetProject returns project id.
func (s *Store) GetProject(ctx context.Context, id string) (*vagrant.Project, error) {
	return projects.get(ctx, s.pool, id)
}

// FindProject returns the project of q.BasisID matching q's non-empty Name and Path.
func (s *Store) FindProject(ctx context.Context, q registry.ProjectQuery) (*vagrant.Project, error) {
	return getProject(ctx, s.pool, quoted("name %s and path %s in basis %s", q.Name, q.Path, q.BasisID),
		selectProject+`WHERE p.basis_id = $1 AND ($2 = '' OR p.name = $2) AND ($3 = '' OR p.path = $3)
		AND ($2 <> '' OR $3 <> '')`, q.BasisID, q.Name, q.Path)
}

// ListProjects returns a reference to every project, oldest first.
func (s *Store) ListProjects(ctx context.Context) ([]*sdk.Ref_Project, error) {
	return collect(ctx, s.pool, "list projects", `SELECT p.resource_id, p.name, p.path, b.resource_id, b.name, b.path
		FROM project p JOIN basis b ON b.resource_id = p.basis_id ORDER BY p.resource_id`, func(r pgx.CollectableRow) (*sdk.Ref_Project, error) {
		p := sdk.Ref_Project{Basis: &sdk.Ref_Basis{}}
		return &p, r.Scan(&p.ResourceId, &p.Name, &p.Path, &p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path)
	})
}

// getProject reads one project (query selects selectProject's columns) with its targets.
func getProject(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Project, error) {
	p := vagrant.Project{Basis: &sdk.Ref_Basis{}}
	pl := projectPlace(&p)
	dest := append(append([]any{&p.ResourceId}, pl.scan()...), &p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path)
	if err := q.QueryRow(ctx, query, args...).Scan(dest...); err != nil {
		return nil, notFound(err, "project", key)
	}
	if err := pl.decode(); err != nil {
		return nil, err
	}
	var err error
	p.Targets, err = collect(ctx, q, "targets of project", `SELECT resource_id, name FROM target WHERE project_id = $1
		ORDER BY resource_id`, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
		t := sdk.Ref_Target{Project: projectRef(&p)}
		return &t, r.Scan(&t.ResourceId, &t.Name)
	}, p.ResourceId)
	return &p, err
}

// projectRef is the reference to p, with its basis.
func projectRef(p *vagrant.Project) *sdk.Ref_Project {
	return cloneProjectRef(&sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.GetBasis()})
}
