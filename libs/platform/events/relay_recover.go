package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
)

// recoverLimit bounds the old unsent rows looked up in one recovery.
const recoverLimit = 100_000

// recover marks sent the unsent rows whose events are already in the stream. A relay that
// died between the stream's acknowledgement and marking its row sent publishes the row again
// when it (or another replica) next runs. Within the stream's duplicate window JetStream drops
// the copy by its Nats-Msg-Id; after the window it would store it a second time. So before
// publishing, rows older than half the window are looked up in the stream, by their ids,
// from their creation time on. Once per run is enough: a row this run publishes and fails to
// mark is republished within seconds, well inside the window.
func (r *Relay) recover(ctx context.Context) error {
	if r.cfg.Stream == "" {
		return nil
	}
	rows, err := r.cfg.Pool.Query(ctx, `SELECT event_id::text, subject, created_at FROM outbox
		WHERE sent_at IS NULL AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`,
		(r.cfg.DuplicateWindow / 2).Seconds(), recoverLimit)
	if err != nil {
		return fmt.Errorf("find old unsent events: %w", err)
	}
	candidates := map[string]bool{}
	subjects := map[string]bool{}
	var from time.Time
	var id, subject string
	var created time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &subject, &created}, func() error {
		candidates[id], subjects[subject] = true, true
		if from.IsZero() || created.Before(from) {
			from = created
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("find old unsent events: %w", err)
	}
	if len(candidates) == 0 {
		return nil
	}
	found, err := r.lookUp(ctx, candidates, subjects, from.Add(-time.Minute)) // a minute of clock skew
	if err != nil {
		return fmt.Errorf("look up old unsent events in stream %s: %w", r.cfg.Stream, err)
	}
	if len(found) > 0 {
		if _, err := r.cfg.Pool.Exec(ctx, "UPDATE outbox SET sent_at = now() WHERE event_id = ANY($1::uuid[]) AND sent_at IS NULL", found); err != nil {
			return fmt.Errorf("mark recovered events sent: %w", err)
		}
	}
	r.log.Info("checked old unsent events against the stream before republishing them",
		"old_unsent", len(candidates), "already_in_stream", len(found))
	return nil
}

// lookUp reads the headers of the stream's messages on subjects from since up to the stream's
// last message now, and returns the candidate ids among their Nats-Msg-Ids.
func (r *Relay) lookUp(ctx context.Context, candidates, subjects map[string]bool, since time.Time) ([]string, error) {
	stream, err := r.cfg.JetStream.Stream(ctx, r.cfg.Stream)
	if err != nil {
		return nil, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, nil
	}
	filter := make([]string, 0, len(subjects))
	for s := range subjects {
		filter = append(filter, s)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: filter, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since, HeadersOnly: true,
	})
	if err != nil {
		return nil, err
	}
	var found []string
	for {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n, done := 0, false
		for msg := range batch.Messages() {
			n++
			if id := msg.Headers().Get(jetstream.MsgIDHeader); candidates[id] {
				found = append(found, id)
			}
			meta, err := msg.Metadata()
			if err != nil {
				return nil, err
			}
			done = done || meta.Sequence.Stream >= last || meta.NumPending == 0
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, err
		}
		if done || n == 0 {
			return found, nil
		}
	}
}
