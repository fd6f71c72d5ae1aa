package grpc

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// AdminServer implements plinth.auth.v1.AdminService: admin check → validate → identity.Service
// (the rules `auth users` uses) → toStatus. Every change is logged with the admin who made it;
// passwords never are.
type AdminServer struct {
	adminpb.UnimplementedAdminServiceServer
	svc *identity.Service
	log *slog.Logger
}

// NewAdminServer serves svc's user administration to admins.
func NewAdminServer(svc *identity.Service, log *slog.Logger) *AdminServer {
	return &AdminServer{svc: svc, log: log}
}

// admin authenticates the call's bearer token as an admin's. auth does this itself (rather
// than through the shared interceptor) because it is the token authority: it reads the token
// and the user's role from its own store on every call.
func (s *AdminServer) admin(ctx context.Context) (identity.User, error) {
	// CheckToken refuses anything not shaped like a token before reading the store.
	method, ok := grpc.Method(ctx)
	if !ok {
		method = "/" + adminpb.AdminService_ServiceDesc.ServiceName + "/"
	}
	u, err := s.svc.Admin(ctx, authn.BearerToken(ctx), method)
	if err != nil {
		return identity.User{}, toStatus(ctx, s.log, err)
	}
	return u, nil
}

// audit logs an admin's change: who did what to whom, never a secret.
func (s *AdminServer) audit(ctx context.Context, actor identity.User, action, username string, attrs ...any) {
	s.log.InfoContext(ctx, "admin changed a user", append([]any{
		"action", action, "admin_id", actor.ID, "admin", actor.Username, "username", username,
	}, attrs...)...)
}

// ListUsers returns a page of users.
func (s *AdminServer) ListUsers(ctx context.Context, req *adminpb.ListUsersRequest) (*adminpb.ListUsersResponse, error) {
	if _, err := s.admin(ctx); err != nil {
		return nil, err
	}
	users, next, err := s.svc.UsersPage(ctx, req.GetPageToken(), req.GetPageSize())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "page_token", input.Quote(req.GetPageToken()))
	}
	resp := &adminpb.ListUsersResponse{NextPageToken: next, Users: make([]*adminpb.User, len(users))}
	for i, u := range users {
		resp.Users[i] = userPB(u)
	}
	return resp, nil
}

// CreateUser adds a user, generating the password when none is given.
func (s *AdminServer) CreateUser(ctx context.Context, req *adminpb.CreateUserRequest) (*adminpb.CreateUserResponse, error) {
	actor, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	role, err := identity.NewUserRole(req.GetAdmin(), req.GetRole())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	password, generated, err := passwordOrGenerated(req.GetPassword())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	u, err := s.svc.AddUser(ctx, req.GetUsername(), password, role)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	s.audit(ctx, actor, "create", u.Username, "user_id", u.ID, "role", string(u.Role), "password_generated", generated != "")
	return &adminpb.CreateUserResponse{User: userPB(u), GeneratedPassword: generated}, nil
}

// SetUserDisabled disables (revoking every token) or enables a user.
func (s *AdminServer) SetUserDisabled(ctx context.Context, req *adminpb.SetUserDisabledRequest) (*adminpb.SetUserDisabledResponse, error) {
	actor, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.svc.SetDisabledBy(ctx, actor, req.GetUsername(), req.GetDisabled())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	action := "enable"
	if u.Disabled {
		action = "disable"
	}
	s.audit(ctx, actor, action, u.Username, "user_id", u.ID)
	return &adminpb.SetUserDisabledResponse{User: userPB(u)}, nil
}

// ResetPassword sets a user's password (generated when none is given) and revokes their tokens.
func (s *AdminServer) ResetPassword(ctx context.Context, req *adminpb.ResetPasswordRequest) (*adminpb.ResetPasswordResponse, error) {
	actor, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	password, generated, err := passwordOrGenerated(req.GetPassword())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	if err := s.svc.ChangePassword(ctx, req.GetUsername(), password); err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	s.audit(ctx, actor, "reset_password", req.GetUsername(), "password_generated", generated != "")
	return &adminpb.ResetPasswordResponse{GeneratedPassword: generated}, nil
}

// RevokeUserTokens revokes every live token of a user.
func (s *AdminServer) RevokeUserTokens(ctx context.Context, req *adminpb.RevokeUserTokensRequest) (*adminpb.RevokeUserTokensResponse, error) {
	actor, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	n, err := s.svc.RevokeTokens(ctx, req.GetUsername())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	s.audit(ctx, actor, "revoke_tokens", req.GetUsername(), "revoked", n)
	return &adminpb.RevokeUserTokensResponse{RevokedTokens: int32(n)}, nil
}

// SetUserRole gives a user another role and revokes their tokens, so it applies at once.
func (s *AdminServer) SetUserRole(ctx context.Context, req *adminpb.SetUserRoleRequest) (*adminpb.SetUserRoleResponse, error) {
	actor, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.svc.SetRoleBy(ctx, actor, req.GetUsername(), req.GetRole())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	s.audit(ctx, actor, "set_role", u.Username, "user_id", u.ID, "role", string(u.Role))
	return &adminpb.SetUserRoleResponse{User: userPB(u)}, nil
}

// passwordOrGenerated returns the requested password, or a generated one (also returned as
// generated, for the response) when the request left it empty.
func passwordOrGenerated(requested string) (password, generated string, err error) {
	if requested != "" {
		return requested, "", nil
	}
	generated, err = identity.GeneratePassword()
	return generated, generated, err
}

func userPB(u identity.User) *adminpb.User {
	return &adminpb.User{
		Id: u.ID, Username: u.Username, Disabled: u.Disabled, Admin: u.Admin, Role: string(u.Role),
		CreateTime: timestamppb.New(u.CreatedAt), UpdateTime: timestamppb.New(u.UpdatedAt),
	}
}
