package events_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// TestOnlyAuthPublishesUserAccessRevoked: user.access_revoked ends every Vagrant token a user
// owns, so it is held like token.revoked — only auth may publish it, and vagrant-server reads
// it from auth's stream through its own ordered consumer under the suite's permissions.
func TestOnlyAuthPublishesUserAccessRevoked(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	s := suiteServer(t)
	authStream := events.StreamOf(&eventsv1.UserAccessRevoked{})
	subject := events.SubjectOf(&eventsv1.UserAccessRevoked{})

	auth := connectAs(t, s.ClientURL(), "auth")
	if _, err := events.EnsureStream(ctx, auth.js, authStream.Name, authStream.Subjects, events.StreamOptions{}); err != nil {
		t.Fatalf("auth cannot create its stream: %v", err)
	}
	data, _ := proto.Marshal(&eventsv1.UserAccessRevoked{UserId: "from-auth"})
	if _, err := auth.js.Publish(ctx, subject, data); err != nil {
		t.Fatalf("auth cannot publish %s: %v", subject, err)
	}

	vagrant := connectAs(t, s.ClientURL(), "vagrant-server")
	since := time.Now().Add(-time.Hour)
	cons, err := vagrant.js.OrderedConsumer(ctx, authStream.Name, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since})
	if err != nil {
		t.Fatalf("vagrant-server cannot read %s: %v", subject, err)
	}
	forged, _ := proto.Marshal(&eventsv1.UserAccessRevoked{UserId: "forged-by-vagrant-server"})
	short, cancel := context.WithTimeout(ctx, time.Second)
	_, err = vagrant.js.Publish(short, subject, forged)
	cancel()
	if err == nil {
		t.Errorf("vagrant-server published %s through JetStream", subject)
	}
	eventually(t, 5*time.Second, "vagrant-server's refusal", func() bool {
		return strings.Contains(vagrant.refusals(), `Permissions Violation for Publish to "`+subject+`"`)
	})

	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		var ev eventsv1.UserAccessRevoked
		if err := proto.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.GetUserId())
	}
	if len(got) != 1 || got[0] != "from-auth" {
		t.Fatalf("vagrant-server read %q, want only auth's [from-auth]", got)
	}
}
