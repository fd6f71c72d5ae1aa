package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// memStore keeps session tokens in a map; the real one (Postgres) is tested in internal/store
// and through the server in internal/app.
type memStore struct{ tokens map[string]sessions.Token }

func (m *memStore) AddSessionToken(_ context.Context, t sessions.Token, admit func(live int) error) error {
	if admit != nil {
		live := 0
		for _, h := range m.tokens {
			if h.UserID == t.UserID && h.RevokedAt.IsZero() && h.ExpiresAt.After(time.Now()) {
				live++
			}
		}
		if err := admit(live); err != nil {
			return err
		}
	}
	m.tokens[string(t.ID)] = t
	return nil
}

func (m *memStore) SessionToken(_ context.Context, id []byte) (sessions.Token, error) {
	t, ok := m.tokens[string(id)]
	if !ok {
		return sessions.Token{}, sessions.ErrUnknown
	}
	return t, nil
}

func (m *memStore) PurgeSessionTokens(context.Context, time.Time) (int64, error) { return 0, nil }

type signer struct{ until time.Time }

func (s *signer) IssueExpiring(_ context.Context, _ []byte, until time.Time) (string, error) {
	s.until = until
	return "wp24signed", nil
}

func TestIssueBoundsTheLifetime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		expires time.Time
		maxTTL  time.Duration
		want    time.Time
		err     error
	}{
		{"the Plinth token's expiry", now.Add(30 * time.Minute), time.Hour, now.Add(30 * time.Minute), nil},
		{"capped by MaxTTL", now.Add(26 * time.Hour), time.Hour, now.Add(time.Hour), nil},
		{"no cap", now.Add(26 * time.Hour), 0, now.Add(26 * time.Hour), nil},
		{"auth names no expiry", time.Time{}, time.Hour, time.Time{}, sessions.ErrNoExpiry},
		{"already expired", now.Add(-time.Second), time.Hour, time.Time{}, sessions.ErrSessionEnded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, sg := &memStore{tokens: map[string]sessions.Token{}}, &signer{}
			svc := sessions.NewService(st, sg, sessions.Options{MaxTTL: tt.maxTTL, Now: func() time.Time { return now }})
			got, err := svc.Issue(context.Background(), authn.Account{ID: "u1", Name: "otto", Role: authz.Operator, Expires: tt.expires}, "plinth-id")
			if !errors.Is(err, tt.err) {
				t.Fatalf("Issue: %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if !got.ExpiresAt.Equal(tt.want) || !sg.until.Equal(tt.want) || got.Token != "wp24signed" {
				t.Fatalf("Issue = %+v signed until %v, want until %v", got, sg.until, tt.want)
			}
			for _, rec := range st.tokens {
				if rec.PlinthTokenID != "plinth-id" || rec.Role != authz.Operator || !rec.ExpiresAt.Equal(tt.want) {
					t.Fatalf("recorded %+v", rec)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &memStore{tokens: map[string]sessions.Token{
		"op":      {Role: authz.Operator, ExpiresAt: now.Add(time.Hour)},
		"viewer":  {Role: authz.Viewer, ExpiresAt: now.Add(time.Hour)},
		"revoked": {Role: authz.Admin, ExpiresAt: now.Add(time.Hour), RevokedAt: now.Add(-time.Second)},
		"expired": {Role: authz.Admin, ExpiresAt: now},
		"norole":  {ExpiresAt: now.Add(time.Hour)},
	}}
	svc := sessions.NewService(st, &signer{}, sessions.Options{Now: func() time.Time { return now }})
	var notAllowed *tokens.NotAllowedError
	for _, tt := range []struct {
		id, method string
		ok         func(error) bool
	}{
		{"op", "QueueJob", func(err error) bool { return err == nil }},
		{"op", "GenerateLoginToken", func(err error) bool { return errors.As(err, &notAllowed) }},
		{"viewer", "_ListJobs", func(err error) bool { return err == nil }},
		{"viewer", "GetJobStream", func(err error) bool { return err == nil }},
		{"viewer", "CancelJob", func(err error) bool { return errors.As(err, &notAllowed) }},
		{"revoked", "ListBasis", func(err error) bool { return errors.Is(err, tokens.ErrInvalid) }},
		{"expired", "ListBasis", func(err error) bool { return errors.Is(err, tokens.ErrExpired) }},
		{"unknown", "ListBasis", func(err error) bool { return errors.Is(err, tokens.ErrInvalid) }},
		{"norole", "ListBasis", func(err error) bool { return errors.As(err, &notAllowed) }},
	} {
		if _, err := svc.Check(context.Background(), []byte(tt.id), tt.method); !tt.ok(err) {
			t.Errorf("Check(%s, %s) = %v", tt.id, tt.method, err)
		}
	}
}
