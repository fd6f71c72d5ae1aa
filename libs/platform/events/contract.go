package events

import (
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// Stream is a publisher's JetStream stream: its name and the subjects it captures.
type Stream struct {
	Name     string
	Subjects []string
}

// SubjectOf is the NATS subject a payload message is published on, declared once beside the
// message in proto/plinth/events/v1 (option (plinth.events.v1.subject)); "" when the message
// declares none.
func SubjectOf(m proto.Message) string {
	opts := m.ProtoReflect().Descriptor().Options()
	if opts == nil {
		return ""
	}
	s, _ := proto.GetExtension(opts, eventsv1.E_Subject).(string)
	return s
}

// StreamOf is the stream of the service that publishes m, declared once in m's file
// (options (plinth.events.v1.stream) and stream_subjects); zero when the file declares none.
// Consumers use it to find a publisher's stream without importing the publisher.
func StreamOf(m proto.Message) Stream {
	opts := m.ProtoReflect().Descriptor().ParentFile().Options()
	if opts == nil {
		return Stream{}
	}
	name, _ := proto.GetExtension(opts, eventsv1.E_Stream).(string)
	subjects, _ := proto.GetExtension(opts, eventsv1.E_StreamSubjects).(string)
	if name == "" || subjects == "" {
		return Stream{}
	}
	return Stream{Name: name, Subjects: []string{subjects}}
}
