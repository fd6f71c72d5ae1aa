package front

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// TestConnectWithoutProtocolVersion: a Connect unary POST without Connect-Protocol-Version
// (what the kaas and auth READMEs' curl examples send) is served, as connect-go's handlers
// serve it (before: a bare 404); a version other than 1 is InvalidArgument, as connect-go
// answers it.
func TestConnectWithoutProtocolVersion(t *testing.T) {
	addr, got := loginPort(t, ServeOptions{})
	pb, _ := proto.Marshal(&authpb.LoginRequest{Username: "alice"})
	for _, tt := range []struct {
		name, contentType, version string
		body                       []byte
		wantCode                   int
		wantBody                   string
	}{
		{"json without the header", "application/json", "", []byte(`{"username":"alice"}`), http.StatusNotImplemented, "test backend"},
		{"json with charset", "application/json; charset=utf-8", "", []byte(`{"username":"alice"}`), http.StatusNotImplemented, "test backend"},
		{"proto without the header", "application/proto", "", pb, http.StatusNotImplemented, "test backend"},
		{"json with version 1", "application/json", "1", []byte(`{"username":"alice"}`), http.StatusNotImplemented, "test backend"},
		{"json with version 2", "application/json", "2", []byte(`{"username":"alice"}`), http.StatusBadRequest, `Connect-Protocol-Version must be \"1\": got \"2\"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+login, bytes.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.contentType)
			if tt.version != "" {
				req.Header.Set("Connect-Protocol-Version", tt.version)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(b), tt.wantBody) {
				t.Errorf("%d %s; want %d %s", resp.StatusCode, b, tt.wantCode, tt.wantBody)
			}
			if l := got.take(); tt.wantCode == http.StatusNotImplemented && (len(l) != 1 || l[0] != "alice") {
				t.Errorf("the backend got %q", l)
			}
		})
	}
}
