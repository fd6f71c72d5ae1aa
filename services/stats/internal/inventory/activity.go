package inventory

import (
	"fmt"
	"strings"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Activity is one change of the suite as an event told it, for the audit trail: what
// happened, when, and who caused it (ActorID and ActorName empty for the system's own work).
type Activity struct {
	ID        int64
	At        time.Time
	Subject   string
	Summary   string
	ActorID   string
	ActorName string
}

// ActivityCursor is where a page of activity (newest first) ends: its last entry's time and id.
// The zero value starts at the newest.
type ActivityCursor struct {
	At time.Time
	ID int64
}

// The lvmd-agent volume subjects, recorded as activity only.
var (
	volumeCreatedSubject = events.SubjectOf(&eventsv1.VolumeCreated{})
	volumeRemovedSubject = events.SubjectOf(&eventsv1.VolumeRemoved{})
	volumeResizedSubject = events.SubjectOf(&eventsv1.VolumeResized{})
)

// Bounds of what an activity keeps from its event.
const (
	maxSummary = 1 << 10
	maxActor   = 64 // a UUID, a username of at most 24 characters
)

// activityOf is the activity an event of subject describes; m is its decoded payload.
func activityOf(subject string, m interface{ GetActor() *eventsv1.Actor }, summary string, at time.Time) (Activity, error) {
	a := m.GetActor()
	if err := input.String("actor.user_id", a.GetUserId(), maxActor); err != nil {
		return Activity{}, err
	}
	if err := input.String("actor.username", a.GetUsername(), maxActor); err != nil {
		return Activity{}, err
	}
	return Activity{At: at, Subject: subject, Summary: input.Truncate(summary, maxSummary), ActorID: a.GetUserId(), ActorName: a.GetUsername()}, nil
}

// clusterSummary says what a ClusterStatusChanged event means.
func clusterSummary(m *eventsv1.ClusterStatusChanged) string {
	var b strings.Builder
	switch {
	case m.GetDeleted():
		fmt.Fprintf(&b, "cluster %s deleted", m.GetCluster())
	case m.GetPreviousStatus() == eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_UNSPECIFIED:
		fmt.Fprintf(&b, "cluster %s created (Kubernetes %s on %s): %s", m.GetCluster(), m.GetK8SVersion(), m.GetProvider(), statusWord(m.GetStatus()))
	default:
		fmt.Fprintf(&b, "cluster %s: %s → %s", m.GetCluster(), statusWord(m.GetPreviousStatus()), statusWord(m.GetStatus()))
	}
	if msg := m.GetStatusMessage(); msg != "" {
		b.WriteString(" (" + msg + ")")
	}
	return b.String()
}

// statusWord is a cluster status in lower case ("running").
func statusWord(s eventsv1.KaasClusterStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "KAAS_CLUSTER_STATUS_"))
}

// volumeActivity is the activity of a volume event, or false for another subject.
func volumeActivity(subject string, data []byte, at time.Time) (Activity, bool, error) {
	var m interface{ GetActor() *eventsv1.Actor }
	var summary string
	switch subject {
	case volumeCreatedSubject:
		var e eventsv1.VolumeCreated
		if err := decode(data, &e); err != nil {
			return Activity{}, true, err
		}
		summary = fmt.Sprintf("volume %s (%s) created in class %s on node %s", e.GetName(), size(e.GetSizeBytes()), e.GetDeviceClass(), e.GetNode())
		if e.GetRestoredFrom() != "" {
			summary += ", restored from " + e.GetRestoredFrom()
		}
		m = &e
	case volumeRemovedSubject:
		var e eventsv1.VolumeRemoved
		if err := decode(data, &e); err != nil {
			return Activity{}, true, err
		}
		summary = fmt.Sprintf("volume %s removed from class %s on node %s", e.GetName(), e.GetDeviceClass(), e.GetNode())
		m = &e
	case volumeResizedSubject:
		var e eventsv1.VolumeResized
		if err := decode(data, &e); err != nil {
			return Activity{}, true, err
		}
		summary = fmt.Sprintf("volume %s resized from %s to %s in class %s on node %s", e.GetName(), size(e.GetPreviousSizeBytes()),
			size(e.GetSizeBytes()), e.GetDeviceClass(), e.GetNode())
		m = &e
	default:
		return Activity{}, false, nil
	}
	a, err := activityOf(subject, m, summary, at)
	return a, true, err
}

// size is a size in GiB when whole, else MiB when whole, else bytes.
func size(b uint64) string {
	switch {
	case b != 0 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b != 0 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d bytes", b)
}
