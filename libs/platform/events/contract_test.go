package events

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

func TestSubjectAndStreamOf(t *testing.T) {
	if got := SubjectOf(&eventsv1.TokenRevoked{}); got != "plinth.auth.token.revoked" {
		t.Errorf("SubjectOf(TokenRevoked) = %q", got)
	}
	// vagrant-server reads both from auth's stream with one consumer: they must share it.
	if got := SubjectOf(&eventsv1.UserAccessRevoked{}); got != "plinth.auth.user.access_revoked" {
		t.Errorf("SubjectOf(UserAccessRevoked) = %q", got)
	}
	if a, b := StreamOf(&eventsv1.UserAccessRevoked{}), StreamOf(&eventsv1.TokenRevoked{}); a.Name != b.Name || a.Name != "PLINTH_AUTH" {
		t.Errorf("StreamOf(UserAccessRevoked) = %+v, StreamOf(TokenRevoked) = %+v, want both PLINTH_AUTH", a, b)
	}
	st := StreamOf(&eventsv1.MachineStateChanged{})
	if st.Name != "PLINTH_KAAS" || len(st.Subjects) != 1 || st.Subjects[0] != "plinth.kaas.>" {
		t.Errorf("StreamOf(MachineStateChanged) = %+v", st)
	}
	if got := SubjectOf(&eventsv1.DeviceClassCapacity{}); got != "" {
		t.Errorf("a message that is no payload has subject %q", got)
	}
}

// TestEveryPayloadDeclaresItsContract walks every message of plinth.events.v1: a message with
// a subject lives in a file with a stream whose filter captures the subject, and no two
// messages share a subject.
func TestEveryPayloadDeclaresItsContract(t *testing.T) {
	seen := map[string]string{}
	payloads := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("plinth.events.v1", func(fd protoreflect.FileDescriptor) bool {
		msgs := fd.Messages()
		for i := range msgs.Len() {
			m := dynamicpb.NewMessage(msgs.Get(i))
			subject := SubjectOf(m)
			if subject == "" {
				continue
			}
			payloads++
			if prev, dup := seen[subject]; dup {
				t.Errorf("%s and %s share subject %s", prev, msgs.Get(i).FullName(), subject)
			}
			seen[subject] = string(msgs.Get(i).FullName())
			st := StreamOf(m)
			if st.Name == "" || !strings.HasSuffix(st.Subjects[0], ">") ||
				!strings.HasPrefix(subject, strings.TrimSuffix(st.Subjects[0], ">")) {
				t.Errorf("%s: subject %s is not captured by its file's stream %+v", msgs.Get(i).FullName(), subject, st)
			}
		}
		return true
	})
	if payloads < 18 {
		t.Errorf("found %d payload messages, want every event of subjects.proto's table", payloads)
	}
}
