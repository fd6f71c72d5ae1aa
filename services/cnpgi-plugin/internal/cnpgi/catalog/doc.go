// Package catalog serves plinth.cnpgi.v1.CatalogService, Plinth's own read-only view of what
// each server's archive holds: WAL range, failures, base backups and the recovery window.
package catalog
