package vagrant

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// jobStreamServer is a vagrant-server whose GetJobStream reports the job running, then
// ends as end says.
type jobStreamServer struct {
	vagrant.UnimplementedVagrantServer
	end func(ctx context.Context) error
}

func (s *jobStreamServer) GetJobStream(_ *vagrant.GetJobStreamRequest, stream grpc.ServerStreamingServer[vagrant.GetJobStreamResponse]) error {
	err := stream.Send(&vagrant.GetJobStreamResponse{Event: &vagrant.GetJobStreamResponse_State_{
		State: &vagrant.GetJobStreamResponse_State{Current: vagrant.Job_RUNNING}}})
	if err != nil {
		return err
	}
	return s.end(stream.Context())
}

// serveVagrant serves impl as vagrant-server on loopback until the test ends and returns a
// connection to it.
func serveVagrant(t *testing.T, impl vagrant.VagrantServer) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	vagrant.RegisterVagrantServer(srv, impl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// followClient is a Client of s.
func followClient(t *testing.T, s *jobStreamServer) *Client {
	t.Helper()
	return &Client{api: vagrant.NewVagrantClient(serveVagrant(t, s)), token: func() (string, error) { return "token", nil }}
}

// endBeforeDeadline answers code shortly before the deadline the client propagated, as
// vagrant-server does when the follow's own deadline ends its stream.
func endBeforeDeadline(code codes.Code, before time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok {
			return status.Error(codes.InvalidArgument, "the client sent no deadline")
		}
		select {
		case <-time.After(time.Until(dl) - before):
		case <-ctx.Done():
		}
		return status.Error(code, "stream terminated by RST_STREAM with error code: CANCEL")
	}
}

// TestFollowTreatsTheEndAtItsDeadlineAsNotDone is the regression test of the follow race:
// the server ends the stream with DeadlineExceeded (or Canceled) from the follow's own
// deadline before the client's timer fired. That is "not done yet", not a failed attempt.
func TestFollowTreatsTheEndAtItsDeadlineAsNotDone(t *testing.T) {
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Canceled} {
		t.Run(code.String(), func(t *testing.T) {
			c := followClient(t, &jobStreamServer{end: endBeforeDeadline(code, 150*time.Millisecond)})
			r, err := c.follow(context.Background(), "job-1", 2*time.Second)
			if err != nil {
				t.Fatalf("the wait running out was reported as a failure: %v", err)
			}
			if r.Done || r.State != vagrant.Job_RUNNING {
				t.Fatalf("result %+v, want not done and running", r)
			}
		})
	}
}

// TestFollowReportsRealErrors: an error well before the deadline, or of another kind at
// the deadline, is still a failure.
func TestFollowReportsRealErrors(t *testing.T) {
	cases := map[string]struct {
		end  func(ctx context.Context) error
		wait time.Duration
		code codes.Code
	}{
		"deadline exceeded long before the follow's deadline": {
			end:  func(context.Context) error { return status.Error(codes.DeadlineExceeded, "the server's own deadline") },
			code: codes.DeadlineExceeded,
		},
		"canceled long before the follow's deadline": {
			end:  func(context.Context) error { return status.Error(codes.Canceled, "server shut down") },
			code: codes.Canceled,
		},
		"unavailable at the deadline": {
			end:  endBeforeDeadline(codes.Unavailable, 150*time.Millisecond),
			wait: 2 * time.Second,
			code: codes.Unavailable,
		},
		"not found at once": {
			end:  func(context.Context) error { return status.Error(codes.NotFound, "no such job") },
			code: codes.NotFound,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := followClient(t, &jobStreamServer{end: tc.end})
			wait := tc.wait
			if wait == 0 {
				wait = 20 * time.Second
			}
			_, err := c.follow(context.Background(), "job-1", wait)
			if status.Code(err) != tc.code {
				t.Fatalf("err %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestNotDone(t *testing.T) {
	deadlineIn := func(d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	other := errors.New("connection refused")
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"the follow's context ended", expired, other, nil},
		{"deadline exceeded near the deadline", deadlineIn(100 * time.Millisecond), status.Error(codes.DeadlineExceeded, "x"), nil},
		{"canceled near the deadline", deadlineIn(100 * time.Millisecond), status.Error(codes.Canceled, "x"), nil},
		{"deadline exceeded well before the deadline", deadlineIn(time.Minute), status.Error(codes.DeadlineExceeded, "x"), status.Error(codes.DeadlineExceeded, "x")},
		{"another error near the deadline", deadlineIn(100 * time.Millisecond), other, other},
		{"no deadline", context.Background(), status.Error(codes.Canceled, "x"), status.Error(codes.Canceled, "x")},
	}
	for _, tc := range cases {
		got := notDone(tc.ctx, time.Second, tc.err)
		if (got == nil) != (tc.want == nil) || (got != nil && got.Error() != tc.want.Error()) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
