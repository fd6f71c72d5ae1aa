package grpc

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

// defaultLogBacklog is the backlog of a GetLogStream whose limit_backlog is 0, as the
// API documents.
const defaultLogBacklog = 50

// logPage is how many new events a log stream reads at a time.
const logPage = 500

// GetLogStream streams the output of the jobs in a basis, project or target (a project's
// includes its targets' jobs, a basis' its projects'), as text lines: first the newest
// limit_backlog lines already stored (0 means 50, negative means all), then new lines as
// runners produce them, until the client ends the call. Each LogBatch holds consecutive
// lines of one job: deployment_id is the job id and instance_id the runner that ran it.
// Upstream's GetLogStream was a stub.
func (s *Server) GetLogStream(req *vagrant.GetLogStreamRequest, stream grpc.ServerStreamingServer[vagrant.LogBatch]) error {
	ctx, cancel := s.untilStopping(stream.Context())
	defer cancel()
	scope, err := s.resolveScope(ctx, req.GetBasis(), req.GetProject(), req.GetTarget())
	if err != nil {
		return s.toStatusOrStopped(ctx, err, "doing", "stream logs")
	}
	if scope.IsZero() {
		return toStatus(ctx, s.log, input.Invalid("scope", "set basis, project or target"), "doing", "stream logs")
	}
	limit := int(req.GetLimitBacklog())
	switch {
	case limit == 0:
		limit = defaultLogBacklog
	case limit < 0:
		limit = -1
	}
	sub := s.notices.Subscribe("") // before the first read: nothing stored after it is missed
	defer sub.Close()
	entries, cur, err := s.output.LogBacklog(ctx, scope, limit, joboutput.LineCount)
	if err != nil {
		return s.toStatusOrStopped(ctx, err, "doing", "stream logs")
	}
	if err := sendLog(stream, entries, limit); err != nil {
		return err
	}
	poll := time.NewTicker(s.poll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return s.stopped(ctx)
		case <-sub.C():
		case <-poll.C:
		}
		for more := true; more; {
			entries, cur, err = s.output.LogSince(ctx, scope, cur, logPage)
			if err != nil {
				return s.streamEnd(ctx, toStatus(ctx, s.log, err, "doing", "stream logs"))
			}
			if err := sendLog(stream, entries, -1); err != nil {
				return err
			}
			more = len(entries) == logPage
		}
	}
}

// sendLog sends entries as lines, one LogBatch per run of one job's lines, keeping only the
// last limit lines (all when limit < 0).
func sendLog(stream grpc.ServerStreamingServer[vagrant.LogBatch], entries []joboutput.Entry, limit int) error {
	type line struct {
		e    *joboutput.Entry
		text string
	}
	var lines []line
	for i := range entries {
		for _, l := range joboutput.Lines(entries[i].Event) {
			lines = append(lines, line{&entries[i], l})
		}
	}
	if limit >= 0 && len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	var batch *vagrant.LogBatch
	for _, l := range lines {
		if batch != nil && batch.DeploymentId != l.e.JobID {
			if err := stream.Send(batch); err != nil {
				return err
			}
			batch = nil
		}
		if batch == nil {
			batch = &vagrant.LogBatch{DeploymentId: l.e.JobID, InstanceId: l.e.Runner}
		}
		batch.Lines = append(batch.Lines, &vagrant.LogBatch_Entry{Timestamp: timestamppb.New(l.e.Time), Line: l.text})
	}
	if batch == nil {
		return nil
	}
	return stream.Send(batch)
}
