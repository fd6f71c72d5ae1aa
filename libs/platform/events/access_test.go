package events_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// suiteServer starts a NATS server that knows only the suite's users, each with the password
// "pw-<user>".
func suiteServer(t *testing.T) *natsembed.Server {
	t.Helper()
	var users []natsembed.User
	for _, a := range events.Suite() {
		users = append(users, natsembed.User{Name: a.User, Password: "pw-" + a.User, Publish: a.Publish, Subscribe: a.Subscribe})
	}
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// client is one suite user's connection, with the refusals the server sent it.
type client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	mu      sync.Mutex
	refused []string
}

func (c *client) refusals() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.refused, "\n")
}

func connectAs(t *testing.T, url, user string) *client {
	t.Helper()
	c := &client{}
	nc, err := events.Connect(url, events.Credentials{User: user, Password: "pw-" + user}, "test-"+user, nil,
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.refused = append(c.refused, err.Error())
			c.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	deadline := time.Now().Add(5 * time.Second)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not connect: %v", user, nc.LastError())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSuiteRefusesClientsWithoutCredentials(t *testing.T) {
	t.Parallel()
	s := suiteServer(t)
	for name, opts := range map[string][]nats.Option{
		"anonymous":      nil,
		"wrong password": {nats.UserInfo("auth", "pw-stats")},
		"unknown user":   {nats.UserInfo("intruder", "pw-intruder")},
	} {
		nc, err := nats.Connect(s.ClientURL(), append(opts, nats.Timeout(3*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected, want refused", name)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: %v, want an authorization violation", name, err)
		}
	}
}

// TestOnlyAuthPublishesRevocations is issue #21's finding: a service other than auth cannot
// put a token.revoked event on the bus, nor tamper with auth's stream, while auth's events
// reach a service that reads them.
func TestOnlyAuthPublishesRevocations(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	s := suiteServer(t)
	authStream := events.StreamOf(&eventsv1.TokenRevoked{})
	revoked := events.SubjectOf(&eventsv1.TokenRevoked{})

	auth := connectAs(t, s.ClientURL(), "auth")
	if _, err := events.EnsureStream(ctx, auth.js, authStream.Name, authStream.Subjects, events.StreamOptions{}); err != nil {
		t.Fatalf("auth cannot create its stream: %v", err)
	}
	data, _ := proto.Marshal(&eventsv1.TokenRevoked{TokenId: "from-auth"})
	if _, err := auth.js.Publish(ctx, revoked, data); err != nil {
		t.Fatalf("auth cannot publish %s: %v", revoked, err)
	}

	// The gateway reads revocations as every token checker does (authn.WatchRevocations).
	gateway := connectAs(t, s.ClientURL(), "gateway")
	cons, err := gateway.js.OrderedConsumer(ctx, authStream.Name, jetstream.OrderedConsumerConfig{FilterSubjects: []string{revoked}})
	if err != nil {
		t.Fatalf("the gateway cannot read auth's stream: %v", err)
	}

	for _, user := range []string{"vagrant-server", "gateway", "stats", "kaas"} {
		c := connectAs(t, s.ClientURL(), user)
		forged, _ := proto.Marshal(&eventsv1.TokenRevoked{TokenId: "forged-by-" + user})
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.js.Publish(short, revoked, forged)
		cancel()
		if err == nil {
			t.Errorf("%s published %s through JetStream", user, revoked)
		}
		if err := c.nc.Publish(revoked, forged); err != nil {
			t.Fatal(err)
		}
		if err := c.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		// Nor may it change or delete auth's stream (a stream of its own capturing the subject
		// is refused by JetStream as overlapping).
		short, cancel = context.WithTimeout(ctx, time.Second)
		_, errUpdate := c.js.UpdateStream(short, jetstream.StreamConfig{Name: authStream.Name, Subjects: []string{"plinth.auth.>", "x.>"}})
		errDelete := c.js.DeleteStream(short, authStream.Name)
		cancel()
		if errUpdate == nil || errDelete == nil {
			t.Errorf("%s changed auth's stream: update %v, delete %v", user, errUpdate, errDelete)
		}
		eventually(t, 5*time.Second, user+"'s refusal", func() bool {
			return strings.Contains(c.refusals(), `Permissions Violation for Publish to "`+revoked+`"`)
		})
	}

	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		var ev eventsv1.TokenRevoked
		if err := proto.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.GetTokenId())
	}
	if len(got) != 1 || got[0] != "from-auth" {
		t.Fatalf("the gateway read %q, want only auth's [from-auth]", got)
	}
}

// TestSuiteEventsFlow runs a publisher's outbox relay and a durable consumer (stats's
// inventory reading lvmd-agent's stream) under their own users, and checks that a reader
// cannot read a stream its role does not name.
func TestSuiteEventsFlow(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	s := suiteServer(t)
	pool, err := pg.Open(ctx, testenv.DB(t).URL, "unused", appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	stream := events.StreamOf(&eventsv1.NodeHeartbeat{})

	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{URL: s.ClientURL(),
		Credentials: events.Credentials{User: "lvmd-agent", Password: "pw-lvmd-agent"},
		Service:     "lvmd-agent", Stream: stream, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Conn.Close)
	runInBackground(t, pub.Relay.Run)
	err = pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := events.Outbox{}.Add(ctx, tx, events.Event{
			Subject: events.SubjectOf(&eventsv1.NodeHeartbeat{}),
			Type:    "plinth.events.v1.NodeHeartbeat",
			Payload: &eventsv1.NodeHeartbeat{Node: "n1"},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	stats := connectAs(t, s.ClientURL(), "stats")
	eventually(t, 20*time.Second, "lvmd-agent's stream", func() bool {
		_, err := stats.js.Stream(ctx, stream.Name)
		return err == nil
	})
	c := events.Consumer{JetStream: stats.js, Pool: pool, Stream: stream.Name, Durable: "stats_inventory_lvmd",
		FilterSubjects: stream.Subjects, Handler: recordingHandler}
	runInBackground(t, c.Run)
	eventually(t, 20*time.Second, "the heartbeat handled by stats", func() bool {
		return count(t, ctx, pool, "SELECT count(*) FROM handled WHERE subject = $1", events.SubjectOf(&eventsv1.NodeHeartbeat{})) == 1
	})
	cons, err := stats.js.Consumer(ctx, stream.Name, "stats_inventory_lvmd")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the heartbeat acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	// The gateway reads auth's revocations only.
	gateway := connectAs(t, s.ClientURL(), "gateway")
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := gateway.js.OrderedConsumer(short, stream.Name, jetstream.OrderedConsumerConfig{}); err == nil {
		t.Error("the gateway read lvmd-agent's stream")
	}
	if strings.Contains(stats.refusals(), "Permissions Violation") {
		t.Errorf("a suite user was refused what its role needs: %s", stats.refusals())
	}
}

// TestRepublishedCopiesAreDropped: permissions cannot stop a service's own stream from
// republishing on auth's subjects (the server copies the message itself), so consumers drop
// every copy the server republished from another stream.
func TestRepublishedCopiesAreDropped(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	s := suiteServer(t)
	pool, err := pg.Open(ctx, testenv.DB(t).URL, "unused", appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	authStream, vagrantStream := events.StreamOf(&eventsv1.TokenRevoked{}), events.StreamOf(&eventsv1.JobStateChanged{})
	revoked := events.SubjectOf(&eventsv1.TokenRevoked{})
	event := func(subject, id string) *nats.Msg {
		m := nats.NewMsg(subject)
		m.Header.Set(events.HeaderSpecVersion, events.SpecVersion)
		m.Header.Set(events.HeaderID, id)
		m.Header.Set(events.HeaderSource, "plinth/auth")
		m.Header.Set(events.HeaderType, "plinth.events.v1.TokenRevoked")
		m.Header.Set(events.HeaderTime, "2026-01-02T03:04:05Z")
		m.Data, _ = proto.Marshal(&eventsv1.TokenRevoked{TokenId: id})
		return m
	}

	auth := connectAs(t, s.ClientURL(), "auth")
	if _, err := events.EnsureStream(ctx, auth.js, authStream.Name, authStream.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.js.PublishMsg(ctx, event(revoked, "from-auth")); err != nil {
		t.Fatal(err)
	}
	vagrant := connectAs(t, s.ClientURL(), "vagrant-server")
	if _, err := vagrant.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: vagrantStream.Name, Subjects: vagrantStream.Subjects,
		RePublish: &jetstream.RePublish{Source: "plinth.vagrant.x", Destination: revoked}}); err != nil {
		t.Fatal(err)
	}
	if _, err := vagrant.js.PublishMsg(ctx, event("plinth.vagrant.x", "forged")); err != nil {
		t.Fatal(err)
	}
	st, err := auth.js.Stream(ctx, authStream.Name)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the copy in auth's stream", func() bool {
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 2
	})

	stats := connectAs(t, s.ClientURL(), "stats")
	c := events.Consumer{JetStream: stats.js, Pool: pool, Stream: authStream.Name, Durable: "revocations_test",
		FilterSubjects: []string{revoked}, Handler: recordingHandler}
	runInBackground(t, c.Run)
	cons, err := stats.js.Consumer(ctx, authStream.Name, "revocations_test")
	for err != nil {
		time.Sleep(20 * time.Millisecond)
		cons, err = stats.js.Consumer(ctx, authStream.Name, "revocations_test")
	}
	eventually(t, 20*time.Second, "both messages settled", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	if n := count(t, ctx, pool, "SELECT count(*) FROM handled WHERE event_id = 'from-auth'"); n != 1 {
		t.Errorf("auth's own revocation handled %d times, want 1", n)
	}
	if n := count(t, ctx, pool, "SELECT count(*) FROM handled WHERE event_id = 'forged'"); n != 0 {
		t.Errorf("the copy vagrant-server's stream republished on %s was handled", revoked)
	}
}

// A wrong password is logged with the user's name, never the password, and the service's
// connection gives up instead of hammering the server.
func TestWrongPasswordIsLoggedWithoutTheSecret(t *testing.T) {
	t.Parallel()
	s := suiteServer(t)
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	nc, err := events.Connect(s.ClientURL(), events.Credentials{User: "auth", Password: "not-the-password-xyz"}, "test", log,
		nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	eventually(t, 10*time.Second, "the connection closed", nc.IsClosed)
	out := logs.String()
	if !strings.Contains(out, "nats_user=auth") || !strings.Contains(out, "refused this service's credentials") {
		t.Errorf("the refusal is not logged with the user:\n%s", out)
	}
	if strings.Contains(out, "not-the-password-xyz") {
		t.Errorf("the password is in the log:\n%s", out)
	}
}
