package events

import (
	"embed"

	"github.com/plinth-dev/plinth/libs/platform/pg"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// MigrationSource is the schema_migrations source of this package's tables.
const MigrationSource = "events"

// Migrations returns the outbox and processed_events tables as a migration set of
// their own, versioned apart from the service's migrations, for pg.Open:
//
//	pool, err := pg.Open(ctx, url, "auth", store.Migrations, events.Migrations())
func Migrations() pg.MigrationSet {
	return pg.MigrationSet{Source: MigrationSource, FS: migrationFiles}
}
