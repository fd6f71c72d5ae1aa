package events

import (
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// Credentials is who a client is on a NATS server that requires users. The zero value
// connects without credentials (a server that allows anonymous clients, such as the tests').
type Credentials struct {
	User     string
	Password string
}

// options are the nats.go options of c: the user and password, and an inbox prefix of the
// user's own (InboxPrefix), so that the replies a client may read are only its own.
func (c Credentials) options() []nats.Option {
	if c.User == "" {
		return nil
	}
	return []nats.Option{nats.UserInfo(c.User, c.Password), nats.CustomInboxPrefix(InboxPrefix(c.User))}
}

// Republished reports whether a message a consumer received was copied there by the server
// from another stream rather than published by a client. Permissions keep a service from
// publishing on another service's subjects, but its own stream's configuration could
// republish there (a RePublish to plinth.auth.token.revoked lands in auth's stream), so
// consumers drop such copies: only a publish by the subject's owner counts.
// The server adds jetstream.StreamHeader to every copy; a client's publish never has it.
func Republished(h nats.Header) bool { return len(h.Values(jetstream.StreamHeader)) > 0 }

// InboxPrefix is where user's replies arrive ("_INBOX.<user>"): the one subject tree besides
// its streams' that a suite user may subscribe to.
func InboxPrefix(user string) string { return "_INBOX." + user }

// Access is what one NATS user of the suite may do: the subjects it may publish on (events,
// JetStream API calls, acknowledgements) and the subjects it may subscribe to. The NATS
// servers of every way to run (make up's embedded one, compose's, the one Kubernetes users
// run) take their authorization from Suite, so the rule is written once.
type Access struct {
	User      string
	Publish   []string
	Subscribe []string
}

// AdminUser is the operator's user: every subject, for the nats CLI and the end-to-end tests.
const AdminUser = "admin"

// A suite user publishes the events of its own stream (and only it may: only auth publishes
// plinth.auth.>), manages that stream, and reads the streams it consumes through JetStream.
type role struct {
	user  string
	owns  proto.Message   // a payload of the stream it publishes; nil: it publishes none
	reads []proto.Message // a payload of each stream it consumes
}

// roles follow the services' wiring: every service that checks tokens reads auth's
// revocations (vagrant-server also its user.access_revoked, from the same stream); stats's
// inventory reads lvmd-agent's and kaas's streams.
var roles = []role{
	{user: "auth", owns: &eventsv1.TokenRevoked{}},
	{user: "stats", reads: []proto.Message{&eventsv1.TokenRevoked{}, &eventsv1.NodeHeartbeat{}, &eventsv1.MachineStateChanged{}}},
	{user: "kaas", owns: &eventsv1.ClusterStatusChanged{}, reads: []proto.Message{&eventsv1.TokenRevoked{}}},
	{user: "vagrant-server", owns: &eventsv1.JobStateChanged{}, reads: []proto.Message{&eventsv1.TokenRevoked{}}},
	{user: "lvmd-agent", owns: &eventsv1.NodeHeartbeat{}},
	{user: "cnpgi-plugin", owns: &eventsv1.WALArchived{}},
	{user: "gateway", reads: []proto.Message{&eventsv1.TokenRevoked{}}},
}

// Suite is the authorization of every suite user, the services' (named after the service)
// and AdminUser's, in a fixed order.
func Suite() []Access {
	out := make([]Access, 0, len(roles)+1)
	for _, r := range roles {
		a := Access{User: r.user, Publish: []string{"$JS.API.INFO"}, Subscribe: []string{InboxPrefix(r.user) + ".>"}}
		if r.owns != nil {
			s := StreamOf(r.owns)
			a.Publish = append(a.Publish, s.Subjects...)
			a.Publish = append(a.Publish, "$JS.API.STREAM.CREATE."+s.Name, "$JS.API.STREAM.UPDATE."+s.Name)
			a.Publish = append(a.Publish, readStream(s.Name)...)
		}
		for _, m := range r.reads {
			a.Publish = append(a.Publish, readStream(StreamOf(m).Name)...)
		}
		out = append(out, a)
	}
	return append(out, Access{User: AdminUser, Publish: []string{">"}, Subscribe: []string{">"}})
}

// SuiteUsers are the users of Suite, services first, AdminUser last.
func SuiteUsers() []string {
	var users []string
	for _, a := range Suite() {
		users = append(users, a.User)
	}
	return users
}

// readStream is what reading a stream through JetStream takes: its info, consumers (ordered
// ones are created, recreated and deleted; durable ones created or updated), pulling, and
// acknowledging what it pulled.
func readStream(stream string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.CONSUMER.CREATE." + stream, "$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
		"$JS.ACK." + stream + ".>",
	}
}

// AccessOf is user's entry of Suite; false when the suite has no such user.
func AccessOf(user string) (Access, bool) {
	all := Suite()
	i := slices.IndexFunc(all, func(a Access) bool { return a.User == user })
	if i < 0 {
		return Access{}, false
	}
	return all[i], true
}
