package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

const selectTarget = `SELECT t.resource_id, t.name, coalesce(t.uuid, ''), t.provider, t.state, t.metadata,
	t.datadir, t.configuration, t.record, p.resource_id, p.name, p.path, b.resource_id, b.name, b.path,
	par.resource_id, par.name
	FROM target t JOIN project p ON p.resource_id = t.project_id JOIN basis b ON b.resource_id = p.basis_id
	LEFT JOIN target par ON par.resource_id = t.parent_id `

// CreateTarget inserts t into the project t.Project.ResourceId names; a target created with a
// state writes target.state_changed in the same transaction.
func (s *Store) CreateTarget(ctx context.Context, t *vagrant.Target) (*vagrant.Target, error) {
	cols, err := targetColumns(t)
	if err != nil {
		return nil, err
	}
	var out *vagrant.Target
	err = pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO target (resource_id, project_id, parent_id, name, uuid, provider, state,
			metadata, datadir, configuration, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			append([]any{t.ResourceId, t.GetProject().GetResourceId()}, cols...)...)
		if err != nil {
			return writeError(err, t)
		}
		if out, err = getTarget(ctx, tx, byID(t.ResourceId), selectTarget+`WHERE t.resource_id = $1`, t.ResourceId); err != nil {
			return err
		}
		return recordTargetChange(ctx, tx, targetState{}, out)
	})
	return out, err
}

// UpdateTarget changes target id through update, holding its row for the transaction.
// The project never changes. A change of state (Target.state, or the Target.Machine state in
// Target.record) writes target.state_changed in the same transaction.
func (s *Store) UpdateTarget(ctx context.Context, id string, update func(*vagrant.Target) error) (*vagrant.Target, error) {
	var out *vagrant.Target
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := getTarget(ctx, tx, byID(id), selectTarget+`WHERE t.resource_id = $1 FOR UPDATE OF t`, id)
		if err != nil {
			return err
		}
		before := stateOf(cur)
		if err := update(cur); err != nil {
			return err
		}
		cols, err := targetColumns(cur)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE target SET parent_id = $2, name = $3, uuid = $4, provider = $5, state = $6,
			metadata = $7, datadir = $8, configuration = $9, record = $10, updated_at = now() WHERE resource_id = $1`,
			append([]any{id}, cols...)...)
		if err != nil {
			return writeError(err, cur)
		}
		if out, err = getTarget(ctx, tx, byID(id), selectTarget+`WHERE t.resource_id = $1`, id); err != nil {
			return err
		}
		return recordTargetChange(ctx, tx, before, out)
	})
	return out, err
}

// targetColumns are the stored columns of t after resource_id and project_id, in table order.
func targetColumns(t *vagrant.Target) ([]any, error) {
	meta, err := metadataJSON(t.Metadata)
	if err != nil {
		return nil, err
	}
	bl, err := blobs(t.Datadir, t.Configuration, t.Record)
	if err != nil {
		return nil, err
	}
	return []any{nullIfEmpty(t.GetParent().GetResourceId()), t.Name, nullIfEmpty(t.Uuid), t.Provider, int32(t.State),
		meta, bl[0], bl[1], bl[2]}, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// GetTarget returns target id.
func (s *Store) GetTarget(ctx context.Context, id string) (*vagrant.Target, error) {
	return getTarget(ctx, s.pool, byID(id), selectTarget+`WHERE t.resource_id = $1`, id)
}

// FindTarget returns the target of q.ProjectID named q.Name, or the one whose uuid starts
// with q.UUIDPrefix (an exact uuid wins over longer ones sharing it as a prefix).
func (s *Store) FindTarget(ctx context.Context, q registry.TargetQuery) (*vagrant.Target, error) {
	if q.UUIDPrefix == "" {
		return getTarget(ctx, s.pool, fmt.Sprintf("name %s in project %s", input.Quote(q.Name), input.Quote(q.ProjectID)),
			selectTarget+`WHERE t.project_id = $1 AND t.name = $2`, q.ProjectID, q.Name)
	}
	rows, err := s.pool.Query(ctx, `SELECT resource_id, uuid = $2 FROM target WHERE uuid LIKE $1 ESCAPE '\'
		ORDER BY uuid = $2 DESC, resource_id LIMIT 2`, escapeLike(q.UUIDPrefix)+"%", q.UUIDPrefix)
	if err != nil {
		return nil, fmt.Errorf("find target by uuid: %w", err)
	}
	type match struct {
		id    string
		exact bool
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (match, error) {
		var m match
		return m, r.Scan(&m.id, &m.exact)
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("find target by uuid: %w", err)
	case len(found) == 0:
		return nil, registry.NotFound("target", "uuid prefix "+input.Quote(q.UUIDPrefix))
	case len(found) > 1 && !found[0].exact:
		return nil, registry.Precondition("target.uuid", input.Quote(q.UUIDPrefix)+" is the start of several targets' uuids; give more of it")
	}
	return s.GetTarget(ctx, found[0].id)
}

// escapeLike quotes LIKE's wildcards so that a uuid prefix matches literally.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ListTargets returns a reference to every target, oldest first.
func (s *Store) ListTargets(ctx context.Context) ([]*sdk.Ref_Target, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.resource_id, t.name, p.resource_id, p.name, p.path, b.resource_id, b.name, b.path
		FROM target t JOIN project p ON p.resource_id = t.project_id JOIN basis b ON b.resource_id = p.basis_id
		ORDER BY t.resource_id`)
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
		t := sdk.Ref_Target{Project: &sdk.Ref_Project{Basis: &sdk.Ref_Basis{}}}
		p := t.Project
		return &t, r.Scan(&t.ResourceId, &t.Name, &p.ResourceId, &p.Name, &p.Path, &p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path)
	})
}

// DeleteTarget removes target id (a no-op when it does not exist); subtargets lose their
// parent (ON DELETE SET NULL).
func (s *Store) DeleteTarget(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM target WHERE resource_id = $1`, id); err != nil {
		return fmt.Errorf("delete target: %w", err)
	}
	return nil
}

// getTarget reads one target (query selects selectTarget's columns) with its subtargets.
func getTarget(ctx context.Context, q querier, key, query string, args ...any) (*vagrant.Target, error) {
	t := vagrant.Target{Project: &sdk.Ref_Project{Basis: &sdk.Ref_Basis{}}}
	p := t.Project
	var state int32
	var meta, datadir, conf, record []byte
	var parentID, parentName *string
	err := q.QueryRow(ctx, query, args...).Scan(&t.ResourceId, &t.Name, &t.Uuid, &t.Provider, &state, &meta,
		&datadir, &conf, &record, &p.ResourceId, &p.Name, &p.Path, &p.Basis.ResourceId, &p.Basis.Name, &p.Basis.Path,
		&parentID, &parentName)
	if err != nil {
		return nil, notFound(err, "target", key)
	}
	t.State = vagrant.Operation_PhysicalState(state)
	if t.Metadata, err = metadataSet(meta); err != nil {
		return nil, err
	}
	if t.Datadir, err = unblob[sdk.Args_DataDir_Target](datadir); err != nil {
		return nil, err
	}
	if t.Configuration, err = unblob[sdk.Args_ConfigData](conf); err != nil {
		return nil, err
	}
	if t.Record, err = unblob[anypb.Any](record); err != nil {
		return nil, err
	}
	if parentID != nil {
		t.Parent = &sdk.Ref_Target{ResourceId: *parentID, Name: *parentName, Project: cloneProjectRef(p)}
	}
	rows, err := q.Query(ctx, `SELECT resource_id, name FROM target WHERE parent_id = $1 ORDER BY resource_id`, t.ResourceId)
	if err != nil {
		return nil, fmt.Errorf("subtargets: %w", err)
	}
	t.Subtargets, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
		sub := sdk.Ref_Target{Project: cloneProjectRef(p)}
		return &sub, r.Scan(&sub.ResourceId, &sub.Name)
	})
	return &t, err
}

func cloneProjectRef(p *sdk.Ref_Project) *sdk.Ref_Project {
	b := p.GetBasis()
	return &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path,
		Basis: &sdk.Ref_Basis{ResourceId: b.GetResourceId(), Name: b.GetName(), Path: b.GetPath()}}
}
