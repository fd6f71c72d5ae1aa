package jobqueue

import (
	"embed"

	"github.com/plinth-dev/plinth/libs/platform/pg"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// MigrationSource is the schema_migrations source of the queue's tables. Never rename it.
const MigrationSource = "jobqueue"

// Migrations returns the jobs and runners tables as a migration set of their own, for
// pg.Open next to the service's migrations and events.Migrations():
//
//	pool, err := pg.Open(ctx, url, "vagrant", migrations, events.Migrations(), jobqueue.Migrations())
func Migrations() pg.MigrationSet {
	return pg.MigrationSet{Source: MigrationSource, FS: migrationFiles}
}
