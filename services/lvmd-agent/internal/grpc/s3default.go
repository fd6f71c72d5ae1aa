package grpc

import (
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// S3Default is the agent's own S3 endpoint and credentials (make up: its dev radosgw), used by
// a backup or restore request that names no endpoint and no credentials at all. lvmd has no
// such default; a request that names any of them is taken exactly as it comes, so upstream
// clients see upstream's behaviour.
type S3Default struct {
	Endpoint, AccessKeyID, SecretAccessKey string
}

// String never shows the secret.
func (d S3Default) String() string { return "S3Default{" + d.Endpoint + ", credentials redacted}" }

// apply returns s with the default's endpoint and credentials when s names none of endpoint,
// access_key_id, secret_access_key and session_token; otherwise s itself.
func (d *S3Default) apply(s *lvmdpb.DataSource_S3) *lvmdpb.DataSource_S3 {
	if d == nil || s == nil || s.GetEndpoint() != "" || s.GetAccessKeyId() != "" || s.GetSecretAccessKey() != "" || s.GetSessionToken() != "" {
		return s
	}
	out := proto.Clone(s).(*lvmdpb.DataSource_S3)
	out.Endpoint, out.AccessKeyId, out.SecretAccessKey = d.Endpoint, d.AccessKeyID, d.SecretAccessKey
	return out
}
