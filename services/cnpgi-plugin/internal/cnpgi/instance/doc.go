// Package instance serves the CNPG-I services the instance manager calls beside PostgreSQL
// (cnpg-i v0.6.0 wire contract): WAL archive and restore, base backups, Postgres
// configuration enrichment and metrics; the rules live in internal/instance/....
package instance
