package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

const selectTarget = `SELECT t.resource_id, t.name, coalesce(t.uuid, ''), t.provider, t.state, t.metadata,
	t.datadir, t.configuration, t.record, p.resource_id, p.name, p.path, b.resource_id, b.name, b.path,
	par.resource_id, par.name
	FROM target t JOIN project p ON p.resource_id = t.project_id JOIN basis b ON b.resource_id = p.basis_id
	LEFT JOIN target par ON par.resource_id = t.parent_id `

// targets is the target table.
var targets = table[*vagrant.Target]{
	byID: selectTarget + `WHERE t.resource_id = $1`, lock: ` FOR UPDATE OF t`,
	insert: `INSERT INTO target (resource_id, project_id, parent_id, name, uuid, provider, state,
		metadata, datadir, configuration, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
	update: `UPDATE target SET parent_id = $2, name = $3, uuid = $4, provider = $5, state = $6,
		metadata = $7, datadir = $8, configuration = $9, record = $10, updated_at = now() WHERE resource_id = $1`,
	columns: targetColumns,
	read:    getTarget,
}

// CreateTarget inserts c.Target into the project c.Target.Project.ResourceId names and
// writes c.Event, when the registry raised one, in the same transaction.
func (s *Store) CreateTarget(ctx context.Context, c registry.TargetChange) (*vagrant.Target, error) {
	var out *vagrant.Target
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		t := c.Target
		var err error
		if out, err = targets.create(ctx, tx, t, t.GetResourceId(), t.GetProject().GetResourceId()); err != nil {
			return err
		}
		return addEvent(ctx, tx, out.GetResourceId(), c.Event)
	})
	return out, err
}

// UpdateTarget writes the change update makes of target id, holding its row for the
// transaction: the target (but never its project) and its event, when update raised one.
func (s *Store) UpdateTarget(ctx context.Context, id string, update func(*vagrant.Target) (registry.TargetChange, error)) (*vagrant.Target, error) {
	return targets.change(ctx, s.pool, id, func(tx pgx.Tx, before *vagrant.Target) (*vagrant.Target, error) {
		c, err := update(before)
		if err != nil {
			return nil, err
		}
		return c.Target, addEvent(ctx, tx, id, c.Event)
	})
}

// addEvent writes ev, the event of a change of target id, to tx's outbox; nil (the change
// raised none) writes nothing.
func addEvent(ctx context.Context, tx pgx.Tx, id string, ev *eventsv1.TargetStateChanged) error {
	if ev == nil {
		return nil
	}
	if _, err := (events.Outbox{}).Add(ctx, tx, events.Event{Payload: ev}); err != nil {
		return fmt.Errorf("target %s: record state change: %w", id, err)
	}
	return nil
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
	return targets.get(ctx, s.pool, id)
}

// FindTarget returns the target of q.ProjectID named q.Name, or the one whose uuid starts
// with q.UUIDPrefix (an exact uuid wins over longer ones sharing it as a prefix).
func (s *Store) FindTarget(ctx context.Context, q registry.TargetQuery) (*vagrant.Target, error) {
	if q.UUIDPrefix == "" {
		return getTarget(ctx, s.pool, quoted("name %s in project %s", q.Name, q.ProjectID),
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
	return collect(ctx, s.pool, "list targets", `SELECT t.resource_id, t.name, p.resource_id, p.name, p.path, b.resource_id, b.name, b.path
		FROM target t JOIN project p ON p.resource_id = t.project_id JOIN basis b ON b.resource_id = p.basis_id
		ORDER BY t.resource_id`, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
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
	t.Subtargets, err = collect(ctx, q, "subtargets", `SELECT resource_id, name FROM target WHERE parent_id = $1
		ORDER BY resource_id`, func(r pgx.CollectableRow) (*sdk.Ref_Target, error) {
		sub := sdk.Ref_Target{Project: cloneProjectRef(p)}
		return &sub, r.Scan(&sub.ResourceId, &sub.Name)
	}, t.ResourceId)
	return &t, err
}

func cloneProjectRef(p *sdk.Ref_Project) *sdk.Ref_Project {
	b := p.GetBasis()
	return &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path,
		Basis: &sdk.Ref_Basis{ResourceId: b.GetResourceId(), Name: b.GetName(), Path: b.GetPath()}}
}
