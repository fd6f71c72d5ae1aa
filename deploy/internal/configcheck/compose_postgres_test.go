package configcheck

import (
	"testing"
)

// TestComposePostgresTrustsNoOne: issue #36 found compose's Postgres (published on 127.0.0.1)
// with trust auth and every service connected as the superuser; each way back is refused.
func TestComposePostgresTrustsNoOne(t *testing.T) {
	src := readRepoFile(t, composeFile)
	const url = "postgres://plinth@postgres:5432/plinth?sslmode=disable&passfile=/run/secrets/postgres/pgpass"
	for _, tc := range []struct{ name, old, new, want string }{
		{"trust auth", "POSTGRES_HOST_AUTH_METHOD: scram-sha-256", "POSTGRES_HOST_AUTH_METHOD: trust",
			"service postgres: POSTGRES_HOST_AUTH_METHOD=trust lets every local account in"},
		{"trust at initdb", "POSTGRES_HOST_AUTH_METHOD: scram-sha-256", "POSTGRES_INITDB_ARGS: --auth-host=trust",
			"POSTGRES_INITDB_ARGS=--auth-host=trust"},
		{"the superuser", url, "postgres://postgres@postgres:5432/plinth?sslmode=disable&passfile=/run/secrets/postgres/pgpass",
			`service auth: PLINTH_DATABASE_URL connects as "postgres"`},
		{"no pass file", url, "postgres://plinth@postgres:5432/plinth?sslmode=disable", "service auth: PLINTH_DATABASE_URL names no passfile"},
		{"pass file outside a secret volume", url, "postgres://plinth@postgres:5432/plinth?sslmode=disable&passfile=/etc/pgpass",
			"passfile /etc/pgpass is in no volume the service mounts read-only"},
		{"pass file volume writable", "      - postgres-plinth:/run/secrets/postgres:ro\n      - nats-auth",
			"      - postgres-plinth:/run/secrets/postgres\n      - nats-auth", "is in no volume the service mounts read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, checkMutated(t, src, tc.old, tc.new), tc.want) })
	}
}

// TestComposePostgresCheckFindsTheTrustOfOld: the check refuses the compose file as it was
// before issue #36 (trust, every service as the superuser).
func TestComposePostgresCheckFindsTheTrustOfOld(t *testing.T) {
	p, err := loadCompose(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	auth := p.Services["auth"]
	trust, superuser := "trust", "postgres://postgres@postgres:5432/plinth?sslmode=disable"
	pg := p.Services["postgres"]
	pg.Environment["POSTGRES_HOST_AUTH_METHOD"] = &trust
	auth.Environment["PLINTH_DATABASE_URL"] = &superuser
	p.Services["postgres"], p.Services["auth"] = pg, auth
	errs := CheckComposePostgres(p)
	if len(errs) < 3 {
		t.Fatalf("the old file: %v; want trust, the superuser and the missing passfile refused", errs)
	}
}
