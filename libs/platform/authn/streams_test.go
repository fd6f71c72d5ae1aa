package authn_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// ticker streams Watch answers every 20 ms until its call's context ends.
type ticker struct {
	lvmdpb.UnimplementedVGServiceServer
}

func (ticker) Watch(_ *lvmdpb.Empty, ss grpc.ServerStreamingServer[lvmdpb.WatchResponse]) error {
	for i := uint64(0); ; i++ {
		if err := ss.Send(&lvmdpb.WatchResponse{FreeBytes: i}); err != nil {
			return err
		}
		select {
		case <-ss.Context().Done():
			// What a handler typically makes of its context ending; the interceptor must
			// answer the token's end instead.
			return status.Error(codes.Unavailable, "shutting down")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestStreamEndsWithItsToken: a stream on a service assembled as every Plinth service is (the
// Verifier step following auth's revocations on NATS, the platform's gRPC server guarded by
// it) ends Unauthenticated within a second of auth publishing the token's revocation — for the
// revoked token only: another token's stream keeps going.
func TestStreamEndsWithItsToken(t *testing.T) {
	// A private NATS server: the test plays auth's stream PLINTH_AUTH, which other tests on a
	// shared server would publish to.
	natsURL := testenv.NATSServer(t, 0, t.TempDir()).ClientURL()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := events.StreamOf(&eventsv1.TokenRevoked{})
	if _, err := events.EnsureStream(ctx, js, st.Name, st.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}

	accounts := map[string]authn.Account{
		"plt_vera": {ID: "v", Name: "vera", Role: authz.Viewer},
		"plt_otto": {ID: "o", Name: "otto", Role: authz.Operator},
	}
	s, err := service.New(service.Options{Name: "streams", Logger: slog.New(slog.DiscardHandler), Admin: config.Admin{AdminAddr: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	_, sjs, err := s.NATS(config.NATS{NATSURL: natsURL})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Verifier(checkerFunc(func(_ context.Context, token string) (authn.Account, bool, error) {
		a, ok := accounts[token]
		return a, ok, nil
	}), sjs, authn.Options{CacheTTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := s.GRPC(config.GRPC{GRPCAddr: "127.0.0.1:0"}, server.Options{Authenticate: v.Authenticate})
	if err != nil {
		t.Fatal(err)
	}
	lvmdpb.RegisterVGServiceServer(srv.GRPC(), ticker{})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	for !v.Watching() {
		if ctx.Err() != nil {
			t.Fatal("the verifier never followed revocations")
		}
		time.Sleep(10 * time.Millisecond)
	}

	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	watch := func(token string) grpc.ServerStreamingClient[lvmdpb.WatchResponse] {
		t.Helper()
		w, err := lvmdpb.NewVGServiceClient(conn).Watch(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), &lvmdpb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatalf("%s's stream: %v", token, err)
		}
		return w
	}
	vera, otto := watch("plt_vera"), watch("plt_otto")

	delete(accounts, "plt_vera")
	publishRevoked(t, js, "plt_vera")
	revoked := time.Now()
	for {
		_, err := vera.Recv()
		if err == nil {
			continue
		}
		if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != authn.MsgTokenEnded {
			t.Fatalf("the revoked token's stream ended with %v, want Unauthenticated %q", err, authn.MsgTokenEnded)
		}
		break
	}
	if d := time.Since(revoked); d > time.Second {
		t.Fatalf("the stream ended %v after the revocation, want within 1s", d)
	}
	for range 5 {
		if _, err := otto.Recv(); err != nil {
			t.Fatalf("another token's stream ended with the revocation: %v", err)
		}
	}
	// The ended call is forgotten; the live one is still bound.
	for v.CallsLen() != 1 {
		if ctx.Err() != nil {
			t.Fatalf("%d calls bound, want otto's only", v.CallsLen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publishRevoked publishes auth's token.revoked for token as auth's outbox relay does.
func publishRevoked(t *testing.T, js jetstream.JetStream, token string) {
	t.Helper()
	data, err := proto.Marshal(&eventsv1.TokenRevoked{TokenId: authn.TokenID(token), UserId: "v",
		Reason: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED})
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(events.SubjectOf(&eventsv1.TokenRevoked{}))
	msg.Data = data
	msg.Header.Set(events.HeaderSpecVersion, events.SpecVersion)
	msg.Header.Set(events.HeaderID, uuid.Must(uuid.NewV7()).String())
	msg.Header.Set(events.HeaderSource, "plinth/auth")
	msg.Header.Set(events.HeaderTime, time.Now().UTC().Format(time.RFC3339Nano))
	msg.Header.Set(events.HeaderContentType, events.ContentTypeProtobuf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// checkerFunc plays auth's CheckToken.
type checkerFunc func(ctx context.Context, token string) (authn.Account, bool, error)

func (f checkerFunc) CheckToken(ctx context.Context, token string) (authn.Account, bool, error) {
	return f(ctx, token)
}
