package maastest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
)

const apiPrefix = "/MAAS/api/2.0/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if err := s.checkOAuth(r.Header.Get("Authorization")); err != nil {
		fail(w, http.StatusUnauthorized, "Authorization Error: "+err.Error())
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
		fail(w, http.StatusBadRequest, "malformed form: "+err.Error())
		return
	}
	if r.Form == nil {
		_ = r.ParseForm()
	}
	path, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok || !strings.HasPrefix(path, "machines/") {
		fail(w, http.StatusNotFound, "Unknown API endpoint: "+r.URL.Path)
		return
	}
	id := strings.Trim(strings.TrimPrefix(path, "machines/"), "/")
	op := r.URL.Query().Get("op")

	s.mu.Lock()
	s.requests++
	s.callers[r.Header.Get("User-Agent")]++
	if s.down {
		s.mu.Unlock()
		fail(w, http.StatusServiceUnavailable, "MAAS is unavailable")
		return
	}
	done := s.enter(r, id)
	s.mu.Unlock()
	defer done()
	if s.o.Latency > 0 {
		time.Sleep(s.o.Latency)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	switch {
	case id == "" && r.Method == http.MethodGet && op == "":
		s.list(w, r)
	case id == "" && r.Method == http.MethodPost && op == "allocate":
		s.allocate(w, r)
	case id != "" && r.Method == http.MethodGet && op == "":
		if m := s.byID(id); m != nil {
			writeJSON(w, m.json())
		} else {
			fail(w, http.StatusNotFound, "Not Found")
		}
	case id != "" && r.Method == http.MethodPost && op == "deploy":
		s.deploy(w, r, id)
	case id != "" && r.Method == http.MethodPost && op == "release":
		s.release(w, r, id)
	default:
		fail(w, http.StatusBadRequest, fmt.Sprintf("Unrecognised signature: method=%s op=%s", r.Method, op))
	}
}

// checkOAuth accepts exactly what MAAS accepts from an API key: OAuth 1.0 with the PLAINTEXT
// method, the key's consumer and token, "&"+secret as signature, a nonce and a timestamp.
func (s *Server) checkOAuth(h string) error {
	rest, ok := strings.CutPrefix(h, "OAuth ")
	if !ok {
		return fmt.Errorf("no OAuth authorization header")
	}
	params, err := parseOAuth(rest)
	if err != nil {
		return err
	}
	want := map[string]string{"oauth_signature_method": "PLAINTEXT", "oauth_version": "1.0",
		"oauth_consumer_key": s.o.Key.Consumer, "oauth_token": s.o.Key.Token, "oauth_signature": "&" + s.o.Key.Secret}
	for k, v := range want {
		if params[k] != v {
			return fmt.Errorf("invalid %s", k)
		}
	}
	if params["oauth_nonce"] == "" || params["oauth_timestamp"] == "" {
		return fmt.Errorf("missing nonce or timestamp")
	}
	return nil
}

// enter counts a request as in flight for its cluster and records an overlap when another
// caller is inside for the same cluster. Callers hold mu; the returned func leaves.
func (s *Server) enter(r *http.Request, id string) func() {
	key := r.Form.Get("agent_name")
	if key == "" {
		key = r.URL.Query().Get("agent_name")
	}
	if key == "" && id != "" {
		if m := s.byID(id); m != nil {
			key = m.AgentName
		}
	}
	if i := strings.LastIndex(key, ":"); i > 0 {
		key = key[:i] // plinth-kaas:<cluster uid>
	}
	if key == "" {
		return func() {}
	}
	caller := r.Header.Get("User-Agent")
	if s.inFlight[key] == nil {
		s.inFlight[key] = map[string]int{}
	}
	for other, n := range s.inFlight[key] {
		if other != caller && n > 0 {
			s.overlaps = append(s.overlaps, fmt.Sprintf("%s: %s and %s", key, other, caller))
		}
	}
	s.inFlight[key][caller]++
	return func() {
		s.mu.Lock()
		s.inFlight[key][caller]--
		s.mu.Unlock()
	}
}

func (s *Server) byID(id string) *Machine {
	for _, m := range s.machines {
		if m.SystemID == id {
			return m
		}
	}
	return nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []map[string]any{}
	for _, m := range s.machines {
		if v := q.Get("agent_name"); v != "" && m.AgentName != v {
			continue
		}
		if v := q.Get("hostname"); v != "" && m.Hostname != v {
			continue
		}
		if ids := q["id"]; len(ids) > 0 && !slices.Contains(ids, m.SystemID) {
			continue
		}
		out = append(out, m.json())
	}
	writeJSON(w, out)
}

// allocate picks the first Ready machine matching the constraints (tags all present, pool,
// zone, system_id) and gives it to the caller: Allocated.
func (s *Server) allocate(w http.ResponseWriter, r *http.Request) {
	var tags []string
	for _, t := range r.Form["tags"] {
		for _, part := range strings.FieldsFunc(t, func(c rune) bool { return c == ',' || c == ' ' }) {
			tags = append(tags, part)
		}
	}
	for _, m := range s.machines {
		if m.Status != maas.StatusReady {
			continue
		}
		if !containsAll(m.Tags, tags) || !matches(r, "pool", m.Pool) || !matches(r, "zone", m.Zone) || !matches(r, "system_id", m.SystemID) {
			continue
		}
		m.Owner, m.AgentName, m.Comment = "kaas", r.Form.Get("agent_name"), r.Form.Get("comment")
		m.set(maas.StatusAllocated, "")
		writeJSON(w, m.json())
		return
	}
	fail(w, http.StatusConflict, fmt.Sprintf("No available machine matches constraints: [('tags', %q)]", tags))
}

func containsAll(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

func matches(r *http.Request, key, value string) bool {
	want := r.Form.Get(key)
	return want == "" || want == value
}

// deploy starts installing an Allocated machine: Deploying, Deployed after DeployTime
// (or Failed deployment when the machine is set to fail).
func (s *Server) deploy(w http.ResponseWriter, r *http.Request, id string) {
	m := s.byID(id)
	if m == nil {
		fail(w, http.StatusNotFound, "Not Found")
		return
	}
	if m.Status != maas.StatusAllocated {
		fail(w, http.StatusConflict, fmt.Sprintf("Can't deploy a machine that is '%s'.", maas.StatusNames[m.Status]))
		return
	}
	ud, err := decodeUserData(r.Form.Get("user_data"))
	if err != nil {
		fail(w, http.StatusBadRequest, "user_data: must be base64 encoded")
		return
	}
	m.UserData = ud
	m.Deployments++
	m.set(maas.StatusDeploying, "Deploying")
	m.until = time.Now().Add(s.o.DeployTime)
	writeJSON(w, m.json())
}

// release starts giving a machine back: Releasing, then Ready after ReleaseTime.
func (s *Server) release(w http.ResponseWriter, r *http.Request, id string) {
	m := s.byID(id)
	if m == nil {
		fail(w, http.StatusNotFound, "Not Found")
		return
	}
	switch m.Status {
	case maas.StatusReady, maas.StatusReleasing:
		writeJSON(w, m.json()) // nothing to do
		return
	case maas.StatusBroken:
		fail(w, http.StatusConflict, "Can't release a machine that is 'Broken'.")
		return
	}
	m.Releases++
	m.set(maas.StatusReleasing, "Releasing")
	m.until = time.Now().Add(s.o.ReleaseTime)
	writeJSON(w, m.json())
}
