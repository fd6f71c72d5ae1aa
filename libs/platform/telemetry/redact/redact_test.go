package redact

import (
	"strings"
	"testing"
)

func TestIsSecretKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"DB_PASSWORD", true},
		{"passwd", true},
		{"pwd", true},
		{"token", true},
		{"access_token", true},
		{"refreshToken", true},
		{"secret", true},
		{"client-secret", true},
		{"Authorization", true},
		{"grpc.metadata.authorization", true},
		{"key", true},
		{"api_key", true},
		{"API-Key", true},
		{"s3.secret_access_key", true},
		{"encryptionKey", true},
		{"ssh_keys", true},
		{"cookie", true},
		{"credentials", true},
		{"creds", true},
		{"private_key_pem", true},
		{"user", false},
		{"grpc.method", false},
		{"trace_id", false},
		{"duration", false},
		{"keyspace", false},
		{"url", false},
		{"PLINTH_AUTH_TOKEN_TTL", false},
		{"password_generated", false},
		{"token_count", false},
	}
	for _, tt := range tests {
		if got := IsSecretKey(tt.key); got != tt.want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plain message", "plain message"},
		{"postgres://app:s3cr3t@db:5432/plinth", "postgres://app:xxxxx@db:5432/plinth"},
		{"dial nats://u:p4ss@h:4222 failed; retry tls://x:y@h2", "dial nats://u:xxxxx@h:4222 failed; retry tls://x:xxxxx@h2"},
		{"postgres://app@db/plinth", "postgres://app@db/plinth"},
		{"host=db user=app password=s3cr3t dbname=p", "host=db user=app password=xxxxx dbname=p"},
		{"host=db password='two words' dbname=p", "host=db password=xxxxx dbname=p"},
		{"a=b c=d", "a=b c=d"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"postgres://app:s3cr3t@db/plinth", "postgres://app:xxxxx@db/plinth"},
		{"postgres://db/plinth?password=s3cr3t", "postgres://db/plinth?password=xxxxx"},
		{"nats://a:b@n1:4222,nats://n2:4222", "nats://a:xxxxx@n1:4222,nats://n2:4222"},
		{"host=db password=s3cr3t", Placeholder},
		{"not a url", Placeholder},
	}
	for _, tt := range tests {
		got := URL(tt.in)
		if got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("URL(%q) leaked the password: %q", tt.in, got)
		}
	}
}
