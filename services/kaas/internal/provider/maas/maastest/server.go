// Package maastest is an in-process MAAS 2.0 region for tests: it serves the machine API kaas
// uses (list and read machines; allocate, deploy, release) over HTTP, checks every request's
// OAuth 1.0 PLAINTEXT header against its API key, and moves machines through MAAS's
// documented lifecycle on its own clock: Ready → Allocated → Deploying → Deployed, and
// Releasing → Ready, with failures (Failed deployment) and outages on demand.
package maastest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
)

// Options shape the region.
type Options struct {
	// Key is the API key requests must be signed with.
	Key maas.APIKey
	// DeployTime is how long Deploying lasts; ReleaseTime how long Releasing does.
	DeployTime, ReleaseTime time.Duration
	// Latency delays every answer (to widen the window in which two callers overlap).
	Latency time.Duration
}

// Machine is one machine of the region.
type Machine struct {
	SystemID, Hostname, Domain string
	Tags                       []string
	Pool, Zone                 string
	IP                         string
	Status                     int
	StatusMessage              string
	Owner, AgentName, Comment  string
	// UserData is the last deployment's user data, decoded.
	UserData []byte
	// FailDeploy makes the next deployment end in Failed deployment.
	FailDeploy bool
	// Deployments counts deployments, Releases releases.
	Deployments, Releases int
	until                 time.Time // when the current transition completes
	history               []int
}

// Server is the region.
type Server struct {
	*httptest.Server
	o Options

	mu       sync.Mutex
	machines []*Machine
	down     bool
	requests int
	// inFlight counts requests being served per cluster (the agent-name prefix) and caller
	// (User-Agent); overlaps records clusters that two callers acted on at once.
	inFlight map[string]map[string]int
	overlaps []string
	callers  map[string]int // requests per User-Agent
}

// New starts a region with no machines; add them with Add.
func New(o Options) *Server {
	if o.DeployTime == 0 {
		o.DeployTime = 50 * time.Millisecond
	}
	if o.ReleaseTime == 0 {
		o.ReleaseTime = 20 * time.Millisecond
	}
	s := &Server{o: o, inFlight: map[string]map[string]int{}, callers: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the region's MAAS URL (what kaas is configured with).
func (s *Server) URL() string { return s.Server.URL + "/MAAS" }

// Add adds n Ready machines carrying tags in pool "default", zone "default". Their addresses
// are on loopback (127.77.x.y), where nothing listens on 6443: a cluster made of them has an
// API endpoint that refuses at once, as an unreachable one would after a timeout.
func (s *Server) Add(n int, tags ...string) []*Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Machine
	for range n {
		i := len(s.machines) + 1
		m := &Machine{SystemID: systemID(), Hostname: fmt.Sprintf("node-%03d", i), Domain: "maas", Tags: slices.Clone(tags),
			Pool: "default", Zone: "default", IP: fmt.Sprintf("127.77.%d.%d", i/250, i%250+1), Status: maas.StatusReady}
		m.history = []int{maas.StatusReady}
		s.machines = append(s.machines, m)
		out = append(out, m)
	}
	return out
}

// SetDown makes the region answer 503 to everything (true) or serve again (false).
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Do runs fn on the machines under the region's lock (to inspect or change them).
func (s *Server) Do(fn func(ms []*Machine)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	fn(s.machines)
}

// Machine returns a copy of the machine with system id id.
func (s *Server) Machine(id string) (Machine, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	for _, m := range s.machines {
		if m.SystemID == id {
			c := *m
			c.Tags = slices.Clone(m.Tags)
			c.history = slices.Clone(m.history)
			return c, true
		}
	}
	return Machine{}, false
}

// History is the sequence of statuses machine id went through.
func (s *Server) History(id string) []string {
	m, _ := s.Machine(id)
	var out []string
	for _, st := range m.history {
		out = append(out, maas.StatusNames[st])
	}
	return out
}

// Allocated returns the machines whose agent name starts with prefix.
func (s *Server) Allocated(prefix string) []Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	var out []Machine
	for _, m := range s.machines {
		if m.AgentName != "" && strings.HasPrefix(m.AgentName, prefix) {
			out = append(out, *m)
		}
	}
	return out
}

// Requests is the number of API requests served.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Callers counts the requests of each caller (User-Agent).
func (s *Server) Callers() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.callers {
		out[k] = v
	}
	return out
}

// Overlaps lists clusters two callers (User-Agents) acted on at the same time.
func (s *Server) Overlaps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.overlaps)
}

func systemID() string {
	const alphabet = "abcdefghjkmnpqrstwxy34678" // MAAS's system ids are six such characters
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// tick completes the transitions whose time has come. Callers hold mu.
func (s *Server) tick() {
	now := time.Now()
	for _, m := range s.machines {
		if m.until.IsZero() || now.Before(m.until) {
			continue
		}
		m.until = time.Time{}
		switch m.Status {
		case maas.StatusDeploying:
			if m.FailDeploy {
				m.FailDeploy = false
				m.set(maas.StatusFailedDeployment, "Installation failed (refer to the installation log for more information).")
			} else {
				m.set(maas.StatusDeployed, "Deployed")
			}
		case maas.StatusReleasing:
			m.Owner, m.AgentName, m.UserData = "", "", nil
			m.set(maas.StatusReady, "")
		}
	}
}

func (m *Machine) set(status int, msg string) {
	m.Status, m.StatusMessage = status, msg
	m.history = append(m.history, status)
}

// json is MAAS's representation of the machine (the fields its clients read).
func (m *Machine) json() map[string]any {
	ips := []string{}
	if m.Status == maas.StatusDeployed || m.Status == maas.StatusDeploying {
		ips = []string{m.IP} // MAAS assigns the AUTO address when it deploys
	}
	return map[string]any{
		"system_id": m.SystemID, "hostname": m.Hostname, "fqdn": m.Hostname + "." + m.Domain,
		"domain": map[string]any{"name": m.Domain}, "status": m.Status, "status_name": maas.StatusNames[m.Status],
		"status_message": m.StatusMessage, "ip_addresses": ips, "tag_names": m.Tags,
		"pool": map[string]any{"name": m.Pool, "id": 0}, "zone": map[string]any{"name": m.Zone, "id": 1},
		"owner": nullable(m.Owner), "osystem": "ubuntu", "distro_series": "jammy", "architecture": "amd64/generic",
		"power_state": "on", "cpu_count": 8, "memory": 32768,
		"resource_uri": "/MAAS/api/2.0/machines/" + m.SystemID + "/",
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// decodeUserData reads deploy's base64 user_data.
func decodeUserData(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(s)
}
