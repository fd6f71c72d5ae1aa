package identity

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// TestForgive is what a success clears, without a store: its pair entirely, one failure of
// its address.
func TestForgive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name          string
		before, after Counters
	}{
		{name: "the pair goes and the address gets this attempt back",
			before: Counters{Pair: counted(4, now, 0), Address: addr(counted(12, now, time.Minute))},
			after:  Counters{Address: addr(counted(11, now, time.Minute))}},
		{name: "an address at one failure keeps its row with none",
			before: Counters{Pair: counted(1, now, 0), Address: addr(counted(1, now, 0))},
			after:  Counters{Address: addr(counted(0, now, 0))}},
		{name: "an address counter cleared meanwhile stays none",
			before: Counters{Pair: counted(1, now, 0), Address: addr(Counter{})},
			after:  Counters{Address: addr(Counter{})}},
		{name: "an unknown address has no counter to forgive",
			before: Counters{Pair: counted(3, now, 0)},
			after:  Counters{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Forgive(c.before); !equalCounters(got, c.after) || got.Pair != (Counter{}) {
				t.Fatalf("forgave %s, want %s", show(got), show(c.after))
			}
		})
	}
}

// TestLoginOvertaken: a user disabled, or given a new password, while their password was being
// checked gets no token: ErrBadLogin, login.failed with the reason, the counters as they were.
func TestLoginOvertaken(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: now}
	tok := Token{ID: "t9", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	counters := Counters{Pair: counted(3, now, 0)}
	for _, c := range []struct {
		name   string
		before LoginState
		reason eventsv1.LoginFailureReason
	}{
		{"disabled meanwhile", LoginState{Username: "alice", Disabled: true, PasswordHash: "$h", Counters: counters}, eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_USER_DISABLED},
		{"new password meanwhile", LoginState{Username: "alice", PasswordHash: "$reset", Counters: counters}, eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_WRONG_PASSWORD},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoginSucceeded(TokenQuota{}, a, tok, "$h", "$rehash")(c.before)
			if err != nil {
				t.Fatal(err)
			}
			if got.Refused != ErrBadLogin || got.Token != nil || got.PasswordHash != "" || !equalCounters(got.Counters, counters) {
				t.Fatalf("got %+v, want ErrBadLogin, no token, no rehash, the counters unchanged", got)
			}
			if len(got.Events) != 1 || got.Events[0].(*eventsv1.LoginFailed).GetReason() != c.reason {
				t.Fatalf("events %v, want one login.failed with %v", got.Events, c.reason)
			}
		})
	}
}

// TestLoginSucceeded is the end of a right password without a store: the token and its
// login.succeeded, or the quota's refusal with neither; the attempt forgiven and a rehash
// written either way.
func TestLoginSucceeded(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := Attempt{Username: "ALICE", ClientAddress: "192.0.2.1", At: now}
	tok := Token{ID: "t9", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	before := LoginState{Username: "alice", PasswordHash: "$h", LiveTokens: 2, Counters: Counters{Pair: counted(3, now, 0), Address: addr(counted(5, now, 0))}}
	forgiven := Counters{Address: addr(counted(4, now, 0))}
	cases := []struct {
		name    string
		quota   TokenQuota
		rehash  string
		issued  bool
		refused bool
	}{
		{name: "no limit issues the token", issued: true},
		{name: "below the limit issues the token", quota: TokenQuota{MaxPerUser: 3}, issued: true},
		{name: "at the limit issues nothing and says why", quota: TokenQuota{MaxPerUser: 2}, refused: true},
		{name: "a rehash is written with the token", rehash: "$new", issued: true},
		{name: "a rehash is written with a refusal too", quota: TokenQuota{MaxPerUser: 1}, rehash: "$new", refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoginSucceeded(c.quota, a, tok, "$h", c.rehash)(before)
			if err != nil {
				t.Fatal(err)
			}
			if !equalCounters(got.Counters, forgiven) || got.PasswordHash != c.rehash {
				t.Fatalf("counters %s hash %q, want %s and %q", show(got.Counters), got.PasswordHash, show(forgiven), c.rehash)
			}
			var qe *TokenQuotaError
			if c.refused != errors.As(got.Refused, &qe) || (c.refused && (qe.Live != 2 || qe.Username != "alice")) {
				t.Fatalf("refused %v, want refused %v (alice holds 2)", got.Refused, c.refused)
			}
			if !c.issued {
				if got.Token != nil || got.Events != nil {
					t.Fatalf("a refusal issues %+v and publishes %v", got.Token, got.Events)
				}
				return
			}
			// The username as stored, not as typed.
			want := &eventsv1.LoginSucceeded{UserId: "u1", Username: "alice", ClientAddress: "192.0.2.1", TokenId: "t9"}
			if got.Token == nil || *got.Token != tok || len(got.Events) != 1 || !proto.Equal(got.Events[0], want) {
				t.Fatalf("issued %+v publishing %v, want %+v and %v", got.Token, got.Events, tok, want)
			}
		})
	}
}

// TestLoginFailedEvent: each failure's reason, and never an unvalidated username.
func TestLoginFailedEvent(t *testing.T) {
	a := Attempt{Username: "mallory", ClientAddress: "192.0.2.7"}
	for why, reason := range map[LoginFailure]eventsv1.LoginFailureReason{
		FailureUnknownUser:   eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_UNKNOWN_USER,
		FailureWrongPassword: eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_WRONG_PASSWORD,
		FailureDisabled:      eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_USER_DISABLED,
		FailureLocked:        eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_LOCKED_OUT,
		FailureInvalid:       eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_INVALID_REQUEST,
	} {
		username := "mallory"
		if why == FailureInvalid {
			username = ""
		}
		want := &eventsv1.LoginFailed{Username: username, ClientAddress: "192.0.2.7", Reason: reason}
		if got := loginFailed(a, why); !proto.Equal(got, want) {
			t.Errorf("failure %d: %v, want %v", why, got, want)
		}
	}
}
