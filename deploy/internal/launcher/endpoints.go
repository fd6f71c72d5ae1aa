package launcher

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Endpoints is what HOME/endpoints.json holds while the suite runs, for tools and tests.
// It is written once everything is ready and removed when the launcher exits. Passwords in
// URLs are redacted: a URL with a password came from the user, who has it already.
type Endpoints struct {
	NATS string `json:"nats"`
	// NATSUser and NATSPasswordFile are the embedded NATS's operator user (all subjects) and
	// the file holding its password; empty when NATS is the user's own.
	NATSUser         string `json:"nats_user,omitempty"`
	NATSPasswordFile string `json:"nats_password_file,omitempty"`
	Database         string `json:"database"`
	// Gateway is the gateway's "127.0.0.1:PORT" (gRPC, gRPC-Web, Connect and the console),
	// empty when no gateway runs.
	Gateway  string            `json:"gateway,omitempty"`
	Services []ServiceEndpoint `json:"services"`
}

// GatewayBinary is the binary whose address Endpoints.Gateway holds.
const GatewayBinary = "gateway"

// ServiceEndpoint is one running service binary.
type ServiceEndpoint struct {
	Name string `json:"name"`
	// GRPC is "127.0.0.1:PORT", "unix:///abs/path", or empty for a binary without gRPC.
	GRPC string `json:"grpc,omitempty"`
	// Admin is the admin HTTP address (/healthz, /readyz, /metrics).
	Admin string `json:"admin"`
	PID   int    `json:"pid"`
}

// EndpointsFile is the name of the endpoints file inside the runtime home.
const EndpointsFile = "endpoints.json"

// writeEndpoints replaces HOME/endpoints.json atomically, so a reader never sees half a file.
func writeEndpoints(home string, e Endpoints) error {
	if e.Services == nil {
		e.Services = []ServiceEndpoint{}
	}
	e.NATS, e.Database = redact(e.NATS), redact(e.Database)
	return writeHomeJSON(home, EndpointsFile, e)
}

// writeHomeJSON replaces HOME/name with v as indented JSON, atomically (a reader never sees
// half a file) and readable by the owner only (CreateTemp makes the file 0600).
func writeHomeJSON(home, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(home, name+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %v %v", name, werr, cerr)
	}
	return os.Rename(tmp.Name(), filepath.Join(home, name))
}

// printEndpoints writes the human summary shown once the suite is up.
func printEndpoints(w io.Writer, e Endpoints) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if e.NATSUser != "" {
		fmt.Fprintf(tw, "NATS\t%s (user %s, password in %s)\n", redact(e.NATS), e.NATSUser, e.NATSPasswordFile)
	} else {
		fmt.Fprintf(tw, "NATS\t%s\n", redact(e.NATS))
	}
	fmt.Fprintf(tw, "Postgres\t%s\n", redact(e.Database))
	if e.Gateway != "" {
		fmt.Fprintf(tw, "Gateway\t%s (gRPC, gRPC-Web, Connect; console http://%s/)\n", e.Gateway, e.Gateway)
	}
	if len(e.Services) > 0 {
		fmt.Fprintln(tw, "service\tgRPC\tadmin")
		for _, s := range e.Services {
			fmt.Fprintf(tw, "%s\t%s\thttp://%s/healthz\n", s.Name, orDefault(s.GRPC, "-"), s.Admin)
		}
	}
	_ = tw.Flush()
}

// grpcurlHint returns an example command for the gateway, else the first TCP gRPC service.
func grpcurlHint(e Endpoints) string {
	if e.Gateway != "" {
		return "try: bin/grpcurl -plaintext " + e.Gateway + " list"
	}
	for _, s := range e.Services {
		if s.GRPC != "" && !strings.HasPrefix(s.GRPC, "unix:") {
			return "try: bin/grpcurl -plaintext " + s.GRPC + " list"
		}
	}
	return ""
}
