package grpc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// The client-api-protocol header is client text: it parses to a version range or an error,
// and negotiation picks a version both sides speak or names who is too old.
func FuzzParseProtocol(f *testing.F) {
	for _, s := range []string{"1,1", " 1 , 1 ", "0,5", "a,b", "", ",", "1,", "4294967296,1", "-1,1", strings.Repeat("9", 100) + ",1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		client, err := parseProtocol(header)
		if err != nil {
			return
		}
		v, reason := negotiate(client, apiProtocol)
		switch {
		case reason == "" && (v < apiProtocol.Minimum || v > apiProtocol.Current || v > client.Current):
			t.Fatalf("%q negotiated version %d outside both ranges", header, v)
		case reason != "" && v != 0:
			t.Fatalf("%q refused (%s) with version %d", header, reason, v)
		}
	})
}

// Any bytes a client sends as a request: the edge check never panics, and a request it lets
// through holds no NUL and no string over its field's limit.
func FuzzCheckRequest(f *testing.F) {
	seed, err := proto.Marshal(&vagrant.QueueJobRequest{Job: &vagrant.Job{
		Labels:       map[string]string{"k": "v"},
		TargetRunner: &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: "r1"}}},
		Operation:    &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}},
	}, ExpiresIn: "1h"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0x0a, 0x03, 0x22, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		req := &vagrant.QueueJobRequest{}
		if proto.Unmarshal(b, req) != nil {
			return
		}
		if CheckRequest(req) != nil {
			return
		}
		if strings.Contains(req.GetExpiresIn(), "\x00") || len(req.GetExpiresIn()) > maxShort || strings.Contains(req.GetJob().GetTargetRunner().GetId().GetId(), "\x00") {
			t.Fatalf("CheckRequest passed %v", req)
		}
		for k, v := range req.GetJob().GetLabels() {
			if strings.Contains(k+v, "\x00") {
				t.Fatalf("CheckRequest passed a NUL in labels: %q=%q", k, v)
			}
		}
	})
}
