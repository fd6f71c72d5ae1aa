// Package instance is the plugin's CNPG-I instance role: the services CloudNativePG's instance
// manager calls on the sidecar beside PostgreSQL, in Pods and in recovery Jobs (cnpg-i v0.6.0
// wire contract), one file each — WAL archive and restore (wal_server.go), base backups
// (backup_server.go), Postgres configuration enrichment (postgres_server.go) and Metrics
// (metrics_server.go, with the failed-archive counter) — and Plinth's own read-only
// CatalogService (catalog_server.go: per server the figures Metrics reports). Each handler
// validates its input, calls its rule (internal/wal, internal/backup, pgconfig/, metrics/) and
// maps the error with errmap. It imports no other role's package.
package instance
