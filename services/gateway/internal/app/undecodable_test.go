package app_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// testUndecodable: a request the backend cannot decode reaches the client as the backend's
// InvalidArgument (the gateway relays frames, it does not decode them), and the gateway logs
// the call at INFO, as every client error; a request to the gateway's own health service it
// cannot decode is InvalidArgument too; a Connect/JSON body that is not JSON is refused by the
// transcoder with invalid_argument.
func testUndecodable(t *testing.T, s *suite, g *gateway, token string) {
	malformed := []byte{0x0a, 0x05, 'a'}      // field 1 announces 5 bytes, 1 follows
	badUTF8 := []byte{0x0a, 0x02, 0xff, 0xfe} // GetFreeBytesRequest.device_class, not UTF-8
	for name, body := range map[string][]byte{"malformed protobuf": malformed, "invalid UTF-8": badUTF8} {
		var out []byte
		err := g.conn.Invoke(bearer(ctxT(t), token), "/proto.VGService/GetFreeBytes", &body, &out, grpc.ForceCodecV2(hostiletest.RawCodec{}))
		if st := status.Convert(err); st.Code() != codes.InvalidArgument ||
			!strings.Contains(st.Message(), "cannot parse the request as proto.GetFreeBytesRequest") {
			t.Errorf("%s through the gateway: %v %q; want the backend's InvalidArgument", name, st.Code(), st.Message())
		}
	}
	var line string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"finished call"`) && strings.Contains(l, `"grpc.code":"InvalidArgument"`) &&
			strings.Contains(l, `"/proto.VGService/GetFreeBytes"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"level":"INFO"`) {
		t.Errorf("the gateway did not log the refused call at INFO: %q", line)
	}

	var out []byte
	err := g.conn.Invoke(ctxT(t), "/grpc.health.v1.Health/Check", &malformed, &out, grpc.ForceCodecV2(hostiletest.RawCodec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("undecodable health check: %v; want InvalidArgument", err)
	}

	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, "http://"+g.addr+"/proto.VGService/GetFreeBytes",
		bytes.NewReader([]byte(`{"deviceClass": `)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), `"code":"invalid_argument"`) {
		t.Errorf("Connect/JSON body that is not JSON: %d %s; want 400 invalid_argument", resp.StatusCode, answer)
	}
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			t.Errorf("logged at ERROR: %s", l)
		}
	}
}
