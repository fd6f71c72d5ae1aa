package e2e

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	identitypb "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// tokenProbes are one read-only call per backend whose route (services/gateway/routes) is
// Token. auth's only Token method is Logout, which changes state; it is probed apart.
func (s *journeySuite) tokenProbes(t *testing.T) []probe {
	t.Helper()
	ps := []probe{
		{"stats GetClusterNodes", "stats", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := statspb.NewStatsServiceClient(c).GetClusterNodes(ctx, &statspb.GetClusterNodesRequest{})
			return err
		}},
		{"kaas GetVersionInformation", "kaas", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := kaaspb.NewClusterClient(c).GetVersionInformation(ctx, &kaaspb.GetVersionMsg{})
			return err
		}},
		// vagrant-server's Plinth runner list takes Plinth tokens (the Vagrant API its own).
		{"vagrant-server ListRunners", "vagrant-server", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := vagrantv1.NewRunnerServiceClient(c).ListRunners(ctx, &vagrantv1.ListRunnersRequest{})
			return err
		}},
		{"cnpgi-plugin GetPluginMetadata", "cnpgi-plugin", func(ctx context.Context, c grpc.ClientConnInterface) error {
			resp, err := identitypb.NewIdentityClient(c).GetPluginMetadata(ctx, &identitypb.GetPluginMetadataRequest{})
			if err == nil && resp.GetName() != "cnpgi.plinth.dev" {
				t.Errorf("GetPluginMetadata through the gateway names %q, want cnpgi.plinth.dev", resp.GetName())
			}
			return err
		}},
	}
	if os.Geteuid() == 0 {
		ps = append(ps, probe{"lvmd-agent GetFreeBytes", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
			resp, err := lvmdpb.NewVGServiceClient(c).GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{})
			if err == nil && resp.GetFreeBytes() == 0 {
				t.Errorf("lvmd-agent reports 0 free bytes on a fresh volume group")
			}
			return err
		}})
	}
	for _, p := range ps {
		s.requireService(t, p.backend)
	}
	return ps
}

// journeyLogin: the first admin logs in through the gateway; the token opens a call to every
// service; the same calls without a token, or with a bad one, are refused with
// Unauthenticated; the public calls work anonymously.
func (s *journeySuite) journeyLogin(t *testing.T) {
	token := s.login(t)
	probes := s.tokenProbes(t)
	auth := authpb.NewAuthServiceClient(s.gw)

	t.Run("WithToken", func(t *testing.T) {
		for _, p := range probes {
			succeeds(t, s.gw, p, token)
		}
		// CheckToken names the account in a response header: it reaches the client.
		var header metadata.MD
		resp, err := auth.CheckToken(withToken(callCtx(t), token), &authpb.CheckTokenRequest{Token: token}, grpc.Header(&header))
		if err != nil || !resp.GetSuccess() {
			t.Errorf("auth CheckToken of a fresh token: %v, %v; want success", resp, err)
		}
		if got := header.Get("plinth-account-id"); len(got) != 1 || got[0] != s.accountID {
			t.Errorf("CheckToken's plinth-account-id through the gateway = %v, want [%s] (Login's account id)", got, s.accountID)
		}
		// vagrant-server's route is Own: the gateway passes its callers' own tokens through.
		v := vagrantpb.NewVagrantClient(s.gw)
		if _, err := v.ListBasis(vagrantCtx(callCtx(t), s.vagrantToken(t)), &emptypb.Empty{}); err != nil {
			t.Errorf("vagrant-server ListBasis with its own token: %v", err)
		}
	})

	t.Run("WithoutToken", func(t *testing.T) {
		for _, p := range probes {
			wantCode(t, p.name+" without a token", p.call(callCtx(t), s.gw), codes.Unauthenticated)
			wantCode(t, p.name+" with a forged token", p.call(withToken(callCtx(t), "plt_forged"), s.gw), codes.Unauthenticated)
		}
		// Logout is a Token route: the gateway refuses it before auth (which would answer
		// success=false).
		_, err := auth.Logout(callCtx(t), &authpb.LogoutRequest{})
		wantCode(t, "auth Logout without a token", err, codes.Unauthenticated)
		// A vagrant-server token is not a Plinth token: the runner list refuses it.
		_, err = vagrantv1.NewRunnerServiceClient(s.gw).ListRunners(withToken(callCtx(t), s.vagrantToken(t)), &vagrantv1.ListRunnersRequest{})
		wantCode(t, "vagrant-server ListRunners with a vagrant token", err, codes.Unauthenticated)
		// vagrant-server refuses by itself what lacks its token.
		_, err = vagrantpb.NewVagrantClient(s.gw).ListBasis(vagrantCtx(callCtx(t), ""), &emptypb.Empty{})
		wantCode(t, "vagrant-server ListBasis without its token", err, codes.Unauthenticated)
	})

	t.Run("PublicAnonymously", func(t *testing.T) {
		resp, err := auth.CheckToken(callCtx(t), &authpb.CheckTokenRequest{Token: "plt_forged"})
		if err != nil || resp.GetSuccess() {
			t.Errorf("anonymous CheckToken of a forged token: %v, %v; want success=false", resp, err)
		}
		// A wrong password is auth's answer, not the gateway's: Unauthenticated too, but
		// from Login itself, which the gateway let through.
		_, err = auth.Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: "x"})
		wantCode(t, "Login with a 1-byte password", err, codes.InvalidArgument)
		if _, err := vagrantpb.NewVagrantClient(s.gw).GetVersionInfo(callCtx(t), &emptypb.Empty{}); err != nil {
			t.Errorf("vagrant-server GetVersionInfo anonymously: %v", err)
		}
		h, err := healthpb.NewHealthClient(s.gw).Check(callCtx(t), &healthpb.HealthCheckRequest{})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("gateway health: %v, %v; want SERVING", h, err)
		}
		s.checkReflectionListsSuite(t)
		s.checkReflectionDescribes(t, "stats.StatsService")
		err = s.gw.Invoke(callCtx(t), "/no.such.Service/Method", &emptypb.Empty{}, &emptypb.Empty{})
		wantCode(t, "a method no route serves", err, codes.Unimplemented)
	})
}

// checkReflectionListsSuite asks the gateway's reflection for its services, anonymously, as
// `grpcurl list` does: every running backend's API is there.
func (s *journeySuite) checkReflectionListsSuite(t *testing.T) {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(s.gw).ServerReflectionInfo(callCtx(t))
	if err != nil {
		t.Fatalf("reflection through the gateway: %v", err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatalf("reflection send: %v", err)
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection list through the gateway: %v", err)
	}
	var listed []string
	for _, svc := range reply.GetListServicesResponse().GetService() {
		listed = append(listed, svc.GetName())
	}
	want := map[string]string{
		"auth": "services.auth.AuthService", "stats": "stats.StatsService", "kaas": "cnct.kaas.api.Cluster",
		"vagrant-server": "hashicorp.vagrant.Vagrant", "lvmd-agent": "proto.VGService",
		"cnpgi-plugin": "cnpgi.identity.v1.Identity",
	}
	for backend, svc := range want {
		if _, _, running := s.service(backend); running && !slices.Contains(listed, svc) {
			t.Errorf("gateway reflection lists %v: %s (%s) is missing", listed, svc, backend)
		}
	}
	if !slices.Contains(listed, "grpc.health.v1.Health") {
		t.Errorf("gateway reflection lists %v: grpc.health.v1.Health is missing", listed)
	}
}

// checkReflectionDescribes asks the gateway's reflection for the file of a backend's service,
// as `grpcurl describe` (and every grpcurl call without proto files) does.
func (s *journeySuite) checkReflectionDescribes(t *testing.T, service string) {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(s.gw).ServerReflectionInfo(callCtx(t))
	if err != nil {
		t.Fatalf("reflection through the gateway: %v", err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}}); err != nil {
		t.Fatalf("reflection send: %v", err)
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection describe %s through the gateway: %v", service, err)
	}
	if e := reply.GetErrorResponse(); e != nil || len(reply.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("reflection describe %s through the gateway: %v", service, e)
	}
}

// journeyLogout: after Logout through the gateway, every token-checked service refuses the
// token within a second, through the gateway and (stats, kaas) when called directly.
func (s *journeySuite) journeyLogout(t *testing.T) {
	token := s.login(t)
	probes := s.tokenProbes(t)
	type target struct {
		name string
		conn grpc.ClientConnInterface
		p    probe
	}
	var targets []target
	for _, p := range probes {
		targets = append(targets, target{p.name + " through the gateway", s.gw, p})
	}
	// stats and kaas check tokens themselves too (defence in depth), with caches of auth's
	// answers that a revocation event must clear.
	for _, p := range probes {
		if addr, _, ok := s.service(p.backend); ok && (p.backend == "stats" || p.backend == "kaas") {
			conn := dialPlain(t, addr)
			targets = append(targets, target{p.name + " at " + addr, conn, p})
		}
	}
	// Warm every cache: each accepts the token now.
	for _, tg := range targets {
		succeeds(t, tg.conn, tg.p, token)
	}
	if t.Failed() {
		t.FailNow()
	}

	auth := authpb.NewAuthServiceClient(s.gw)
	resp, err := auth.Logout(withToken(callCtx(t), token), &authpb.LogoutRequest{})
	if err != nil || !resp.GetSuccess() {
		t.Fatalf("Logout through the gateway: %v, %v", resp, err)
	}
	loggedOut := time.Now()
	const within = time.Second
	for _, tg := range targets {
		var last error
		for {
			last = tg.p.call(withToken(callCtx(t), token), tg.conn)
			if status.Code(last) == codes.Unauthenticated {
				t.Logf("%s refuses the token %s after Logout", tg.name, time.Since(loggedOut).Round(time.Millisecond))
				break
			}
			if time.Since(loggedOut) > within {
				t.Errorf("%s still answers %v to a token logged out %s ago", tg.name, last, time.Since(loggedOut).Round(time.Millisecond))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// auth itself: its Token route refuses the revoked token, CheckToken says no.
	_, err = auth.Logout(withToken(callCtx(t), token), &authpb.LogoutRequest{})
	wantCode(t, "auth Logout with a logged-out token", err, codes.Unauthenticated)
	if ct, err := auth.CheckToken(callCtx(t), &authpb.CheckTokenRequest{Token: token}); err != nil || ct.GetSuccess() {
		t.Errorf("CheckToken of a logged-out token: %v, %v; want success=false", ct, err)
	}
}
