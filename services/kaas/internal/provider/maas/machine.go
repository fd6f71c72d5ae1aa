// Package maas is kaas's machine provider for a MAAS 2.0 region: its own REST client
// (OAuth 1.0 PLAINTEXT, the API key consumer:token:secret) allocating machines tagged with
// the pool's instance type (plus resource pool and zone when configured), deploying them with
// cloud-init user data that runs kubeadm, polling their status, and releasing them.
package maas

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
)

// MAAS's machine status codes (maasserver NODE_STATUS), as the API reports them in
// "status"; "status_name" spells them for people.
const (
	StatusNew               = 0
	StatusCommissioning     = 1
	StatusFailedCommission  = 2
	StatusMissing           = 3
	StatusReady             = 4
	StatusReserved          = 5
	StatusDeployed          = 6
	StatusRetired           = 7
	StatusBroken            = 8
	StatusDeploying         = 9
	StatusAllocated         = 10
	StatusFailedDeployment  = 11
	StatusReleasing         = 12
	StatusFailedReleasing   = 13
	StatusDiskErasing       = 14
	StatusFailedDiskErasing = 15
	StatusRescueMode        = 16
	StatusEnteringRescue    = 17
	StatusFailedEnterRescue = 18
	StatusExitingRescue     = 19
	StatusFailedExitRescue  = 20
	StatusTesting           = 21
	StatusFailedTesting     = 22
)

// StatusNames are MAAS's names of its status codes.
var StatusNames = map[int]string{
	StatusNew: "New", StatusCommissioning: "Commissioning", StatusFailedCommission: "Failed commissioning",
	StatusMissing: "Missing", StatusReady: "Ready", StatusReserved: "Reserved", StatusDeployed: "Deployed",
	StatusRetired: "Retired", StatusBroken: "Broken", StatusDeploying: "Deploying", StatusAllocated: "Allocated",
	StatusFailedDeployment: "Failed deployment", StatusReleasing: "Releasing", StatusFailedReleasing: "Failed releasing",
	StatusDiskErasing: "Disk erasing", StatusFailedDiskErasing: "Failed disk erasing", StatusRescueMode: "Rescue mode",
	StatusEnteringRescue: "Entering rescue mode", StatusFailedEnterRescue: "Failed to enter rescue mode",
	StatusExitingRescue: "Exiting rescue mode", StatusFailedExitRescue: "Failed to exit rescue mode",
	StatusTesting: "Testing", StatusFailedTesting: "Failed testing",
}

// Named is a MAAS object reference ({"name": ..., "id": ...}) such as a machine's pool or zone.
type Named struct {
	Name string `json:"name"`
	ID   int    `json:"id"`
}

// Machine is the part of MAAS's machine representation kaas reads.
type Machine struct {
	SystemID      string   `json:"system_id"`
	Hostname      string   `json:"hostname"`
	FQDN          string   `json:"fqdn"`
	Status        int      `json:"status"`
	StatusName    string   `json:"status_name"`
	StatusMessage string   `json:"status_message"`
	IPAddresses   []string `json:"ip_addresses"`
	TagNames      []string `json:"tag_names"`
	Owner         string   `json:"owner"`
	Pool          *Named   `json:"pool"`
	Zone          *Named   `json:"zone"`
	OSystem       string   `json:"osystem"`
	DistroSeries  string   `json:"distro_series"`
	ResourceURI   string   `json:"resource_uri"`
}

// Limits on what is believed of a response: a MAAS (or something posing as one) cannot make
// kaas store unbounded strings.
const (
	maxIDLen      = 64
	maxTextLen    = 1024
	maxAddresses  = 64
	maxResponse   = 8 << 20
	maxStatusCode = 1000
)

// check validates a decoded machine.
func (m *Machine) check() error {
	switch {
	case m.SystemID == "" || len(m.SystemID) > maxIDLen:
		return errors.New("machine without a valid system_id")
	case len(m.Hostname) > 253 || len(m.FQDN) > 253:
		return errors.New("machine hostname too long")
	case m.Status < 0 || m.Status > maxStatusCode:
		return fmt.Errorf("machine status %d out of range", m.Status)
	case len(m.IPAddresses) > maxAddresses:
		return errors.New("machine lists too many addresses")
	}
	for _, a := range m.IPAddresses {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("machine address %.64q is not an IP address", a)
		}
	}
	if len(m.StatusMessage) > maxTextLen {
		m.StatusMessage = m.StatusMessage[:maxTextLen]
	}
	if len(m.StatusName) > maxTextLen {
		m.StatusName = m.StatusName[:maxTextLen]
	}
	return nil
}

// Name is the machine's status name, MAAS's own or derived from the code.
func (m *Machine) Name() string {
	if m.StatusName != "" {
		return m.StatusName
	}
	if n, ok := StatusNames[m.Status]; ok {
		return n
	}
	return fmt.Sprintf("status %d", m.Status)
}

// DecodeMachine reads one machine from a MAAS response body.
func DecodeMachine(body []byte) (Machine, error) {
	var m Machine
	if err := json.Unmarshal(body, &m); err != nil {
		return Machine{}, fmt.Errorf("MAAS returned a machine kaas cannot read: %w", err)
	}
	if err := m.check(); err != nil {
		return Machine{}, fmt.Errorf("MAAS returned an invalid machine: %w", err)
	}
	return m, nil
}

// DecodeMachines reads a machine list from a MAAS response body.
func DecodeMachines(body []byte) ([]Machine, error) {
	var ms []Machine
	if err := json.Unmarshal(body, &ms); err != nil {
		return nil, fmt.Errorf("MAAS returned a machine list kaas cannot read: %w", err)
	}
	for i := range ms {
		if err := ms[i].check(); err != nil {
			return nil, fmt.Errorf("MAAS returned an invalid machine: %w", err)
		}
	}
	return ms, nil
}
