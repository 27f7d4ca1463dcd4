package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Ports are the lab's listening ports (defaults plus the port offset).
type Ports struct {
	Indexer    int `json:"indexer"`
	Transport  int `json:"transport"`
	API        int `json:"api"`
	Agent      int `json:"agent"`
	Enrollment int `json:"enrollment"`
	Syslog     int `json:"syslog"`
	Dashboard  int `json:"dashboard"`
	// Cluster is the manager cluster port (wazuh-clusterd, 1516): distributed labs only.
	Cluster int `json:"cluster,omitempty"`
}

// PortShiftEnv names the environment variable that moves every test lab's
// port offset by the same amount, so two checkouts can run the same
// end-to-end package at once on one machine (0 to 4000, default 0).
const PortShiftEnv = "SIEMCTL_E2E_PORT_SHIFT"

// PortShift returns $SIEMCTL_E2E_PORT_SHIFT, or an error naming the fix.
func PortShift() (int, error) {
	v := os.Getenv(PortShiftEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 4000 {
		return 0, fmt.Errorf("%s=%q: want a whole number from 0 to 4000", PortShiftEnv, v)
	}
	return n, nil
}

// State is DIR/lab.json: everything down, status, fault and heal need from a new process.
// It holds no secrets.
type State struct {
	ID         string            `json:"id"`
	Profile    string            `json:"profile"` // Profiles key ("" in labs made before profiles: siem)
	Syslog     bool              `json:"syslog"`  // the manager has a syslog <remote>
	Dir        string            `json:"dir"`
	Root       string            `json:"root"`
	SystemdPID int               `json:"systemd_pid"`
	Cgroups    []string          `json:"cgroups"`
	Ports      Ports             `json:"ports"`
	PortOffset int               `json:"port_offset"` // added to every default port
	Version    string            `json:"version"`
	Versions   map[string]string `json:"versions"` // package → Debian version installed by up
	Units      []string          `json:"units"`    // in start order
	Emulators  bool              `json:"emulators"`
	Faults     []string          `json:"faults"` // active faults
	StartedAt  time.Time         `json:"started_at"`
	// Distributed labs: DIR/lab.json has Topology "distributed" and the Hosts; each host's own
	// DIR/hosts/<host>/lab.json has Host, its Address, its Components and the indexer nodes.
	Topology    string     `json:"topology,omitempty"`
	Hosts       []DistHost `json:"hosts,omitempty"`
	Host        string     `json:"host,omitempty"`
	Address     string     `json:"address,omitempty"`    // the host's own loopback address ("": 127.0.0.1)
	Components  []string   `json:"components,omitempty"` // what runs here ("": the single lab's set)
	IndexerURLs []string   `json:"indexer_urls,omitempty"`
	// FaultPIDs are processes a fault started (port-held's listener), by fault.
	FaultPIDs map[string]int `json:"fault_pids,omitempty"`
}

const stateFile = "lab.json"

// ErrNoLab means DIR holds no running lab.
var ErrNoLab = errors.New("no lab in this directory")

func readState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoLab)
	}
	if err != nil {
		return nil, fmt.Errorf("read lab state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, stateFile), err)
	}
	if st.Faults == nil {
		st.Faults = []string{}
	}
	return &st, nil
}

func writeState(st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lab state: %w", err)
	}
	return writeFile(filepath.Join(st.Dir, stateFile), append(data, '\n'), 0o644)
}
