package grpc

import (
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

// S3Default is the agent's own S3 endpoint and credentials (make up: its dev radosgw, as a
// user of its own limited to lvmd's bucket), used by a backup or restore request that names
// nothing but a path (and an encryption key). lvmd has no such default; a request that names
// any endpoint, credential, proxy or TLS option is taken exactly as it comes, so upstream
// clients see upstream's behaviour — and the agent's signed requests, with its access key id,
// never travel through a caller's proxy (issue #36).
type S3Default struct {
	Endpoint, AccessKeyID, SecretAccessKey string
	// Bucket is the store's bucket, which people put first in a backup's path; "" when the
	// agent does not know it (the console then asks for it).
	Bucket string
}

// String never shows the secret.
func (d S3Default) String() string { return "S3Default{" + d.Endpoint + ", credentials redacted}" }

// apply returns s with the default's endpoint and credentials when s names none of endpoint,
// access_key_id, secret_access_key, session_token, http_proxy, https_proxy and verify_tls
// (isDefault true); otherwise s itself.
func (d *S3Default) apply(s *lvmdpb.DataSource_S3) (_ *lvmdpb.DataSource_S3, isDefault bool) {
	if d == nil || s == nil || namesConnection(s) {
		return s, false
	}
	out := proto.Clone(s).(*lvmdpb.DataSource_S3)
	out.Endpoint, out.AccessKeyId, out.SecretAccessKey = d.Endpoint, d.AccessKeyID, d.SecretAccessKey
	return out, true
}

// target validates s (completed by the default store when it names no connection) as a
// backup target of the request's field.
func (d *S3Default) target(field string, s *lvmdpb.DataSource_S3) (backup.Target, error) {
	s, isDefault := d.apply(s)
	t, err := toTarget(field, s)
	t.Default = isDefault
	return t, err
}

// namesConnection reports whether s says anything about how to reach its store: then it is a
// store of the caller's, not the agent's.
func namesConnection(s *lvmdpb.DataSource_S3) bool {
	return s.GetEndpoint() != "" || s.GetAccessKeyId() != "" || s.GetSecretAccessKey() != "" || s.GetSessionToken() != "" ||
		s.GetHttpProxy() != "" || s.GetHttpsProxy() != "" || s.GetVerifyTls()
}
