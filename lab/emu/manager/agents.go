package manager

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// Connection states as stored (what remoted last saw).
const (
	StatusActive         = "active"
	StatusDisconnected   = "disconnected"
	StatusNeverConnected = "never_connected"
	StatusPending        = "pending"
)

// OS is an agent's operating system (as reported at connection).
type OS struct {
	Arch     string `json:"arch,omitempty"`
	Codename string `json:"codename,omitempty"`
	Major    string `json:"major,omitempty"`
	Minor    string `json:"minor,omitempty"`
	Name     string `json:"name,omitempty"`
	Platform string `json:"platform,omitempty"`
	Uname    string `json:"uname,omitempty"`
	Version  string `json:"version,omitempty"`
}

// Agent is one registered agent as persisted in the agents database (Home.AgentsDB: queue/db/global.db,
// one JSON object per line). Agent 000 (the manager) is not stored: it is synthesised from the manager's
// own state.
type Agent struct {
	ID            int      `json:"id"`
	Name          string   `json:"name"`
	IP            string   `json:"ip,omitempty"`
	RegisterIP    string   `json:"register_ip"`
	Key           string   `json:"key"`
	Conn          string   `json:"conn"`
	Version       string   `json:"version,omitempty"`
	DateAdd       int64    `json:"date_add"`
	LastKeepAlive int64    `json:"last_keepalive,omitempty"` // for active agents: refreshed at read time
	Group         []string `json:"group,omitempty"`
	ConfigSum     string   `json:"config_sum,omitempty"`
	MergedSum     string   `json:"merged_sum,omitempty"`
	Synced        bool     `json:"synced"`
	OS            *OS      `json:"os,omitempty"`
	// SyscheckStart and SyscheckEnd are the unix times of the last syscheck scan (0: never ran).
	SyscheckStart int64 `json:"syscheck_start,omitempty"`
	SyscheckEnd   int64 `json:"syscheck_end,omitempty"`
	// Node is the node a worker's agent reports to, in the master's database (global.db's node_name,
	// written by the worker's agent-info sync); "" is an agent of this node.
	Node string `json:"node_name,omitempty"`
	// Manager is the hostname of the node a worker's agent reports to (global.db's manager_host, from
	// the same sync); "" is this node's hostname.
	Manager string `json:"manager_host,omitempty"`
}

// IDString is the three-digit zero-padded id.
func (a *Agent) IDString() string { return fmt.Sprintf("%03d", a.ID) }

// AgentStore reads and writes the agents database file. Reads are cached and reloaded when the file
// changes (the tools may edit it while the daemon runs); writes take an exclusive file lock.
type AgentStore struct {
	home Home

	mu     sync.Mutex
	agents []*Agent // sorted by ID
	stamp  fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// NewAgentStore opens the store of an install directory.
func NewAgentStore(h Home) *AgentStore { return &AgentStore{home: h} }

func stampOf(st fs.FileInfo) fileStamp {
	return fileStamp{size: st.Size(), mtime: st.ModTime(), ino: inodeOf(st)}
}

// ErrNoDatabase means the agents database has not been created yet.
var ErrNoDatabase = errors.New("agents database not initialised")

// Agents returns the current agents sorted by id (shared slice: callers must not modify it).
func (s *AgentStore) Agents() ([]*Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := os.Stat(s.home.AgentsDB())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoDatabase
	}
	if err != nil {
		return nil, fmt.Errorf("agents database: %w", err)
	}
	if s.agents != nil && stampOf(st) == s.stamp {
		return s.agents, nil
	}
	agents, err := readAgents(s.home.AgentsDB())
	if err != nil {
		return nil, err
	}
	s.agents, s.stamp = agents, stampOf(st)
	return agents, nil
}

func readAgents(path string) ([]*Agent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agents database: %w", err)
	}
	defer f.Close()
	var out []*Agent
	intern := map[string]string{}
	in := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		a := &Agent{}
		if err := json.Unmarshal(b, a); err != nil {
			return nil, fmt.Errorf("agents database line %d: %w", line, err)
		}
		a.Conn, a.Version, a.RegisterIP = in(a.Conn), in(a.Version), in(a.RegisterIP)
		if a.OS != nil {
			o := *a.OS
			o.Arch, o.Codename, o.Major, o.Minor = in(o.Arch), in(o.Codename), in(o.Major), in(o.Minor)
			o.Name, o.Platform, o.Uname, o.Version = in(o.Name), in(o.Platform), in(o.Uname), in(o.Version)
			a.OS = &o
		}
		for i, g := range a.Group {
			a.Group[i] = in(g)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("agents database: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Update runs fn on a private copy of the agents under the file lock and writes the result (and
// client.keys) atomically. fn returns false to skip the write.
func (s *AgentStore) Update(fn func(agents []*Agent) ([]*Agent, bool, error)) error {
	if err := os.MkdirAll(filepath.Dir(s.home.AgentsDB()), 0o750); err != nil {
		return fmt.Errorf("agents database: %w", err)
	}
	lk := flock.New(s.home.AgentsDB() + ".lock")
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock agents database: %w", err)
	}
	defer lk.Unlock()
	cur, err := s.cachedCopy(), error(nil)
	if cur == nil {
		cur, err = readAgents(s.home.AgentsDB())
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	next, write, err := fn(cur)
	if err != nil || !write {
		return err
	}
	return s.write(next)
}

func (s *AgentStore) write(agents []*Agent) error {
	sort.Slice(agents, func(i, j int) bool { return agents[i].ID < agents[j].ID })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, a := range agents {
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("encode agent %03d: %w", a.ID, err)
		}
	}
	if err := renameio.WriteFile(s.home.AgentsDB(), buf.Bytes(), 0o640); err != nil {
		return fmt.Errorf("write agents database: %w", err)
	}
	if err := writeClientKeys(s.home.ClientKeys(), agents); err != nil {
		return err
	}
	// What was written is what the next read would parse: keep it (a fleet of 10,000 agents takes
	// a second to parse on a loaded host).
	st, err := os.Stat(s.home.AgentsDB())
	s.mu.Lock()
	s.agents = nil
	if err == nil {
		s.agents, s.stamp = agents, stampOf(st)
	}
	s.mu.Unlock()
	return nil
}

// cachedCopy returns a private copy of the cached agents when the file has not changed since they
// were read or written (nil otherwise): Update's callers change the agents in place.
func (s *AgentStore) cachedCopy() []*Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agents == nil {
		return nil
	}
	st, err := os.Stat(s.home.AgentsDB())
	if err != nil || stampOf(st) != s.stamp {
		return nil
	}
	out := make([]*Agent, len(s.agents))
	for i, a := range s.agents {
		c := *a
		if a.OS != nil {
			o := *a.OS
			c.OS = &o
		}
		c.Group = slices.Clone(a.Group)
		out[i] = &c
	}
	return out
}

// writeClientKeys rewrites etc/client.keys ("<id> <name> <ip|any> <key>"), keeping removed-agent lines
// ("<id> !<name> ...") that are already there unless their id is reused.
func writeClientKeys(path string, agents []*Agent) error {
	live := make(map[string]bool, len(agents))
	var buf bytes.Buffer
	for _, a := range agents {
		if a.ID == 0 || a.Node != "" { // a worker's agent: its key is in the worker's client.keys
			continue
		}
		live[a.IDString()] = true
		fmt.Fprintf(&buf, "%s %s %s %s\n", a.IDString(), a.Name, a.RegisterIP, a.Key)
	}
	if old, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(old), "\n") {
			f := strings.Fields(l)
			if len(f) == 4 && (strings.HasPrefix(f[1], "!") || strings.HasPrefix(f[1], "#")) && !live[f[0]] {
				buf.WriteString(l + "\n")
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("write client.keys: %w", err)
	}
	if err := renameio.WriteFile(path, buf.Bytes(), 0o640); err != nil {
		return fmt.Errorf("write client.keys: %w", err)
	}
	return nil
}

// markRemoved appends a removed-agent line for each id (what happens without purge).
func markRemoved(path string, removed []*Agent) error {
	if len(removed) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("client.keys: %w", err)
	}
	defer f.Close()
	for _, a := range removed {
		if _, err := fmt.Fprintf(f, "%s !%s %s %s\n", a.IDString(), a.Name, a.RegisterIP, a.Key); err != nil {
			return fmt.Errorf("client.keys: %w", err)
		}
	}
	return nil
}

func agentKey(id int, name string) string {
	a := md5.Sum([]byte(fmt.Sprintf("%03d-%s-a", id, name)))
	b := md5.Sum([]byte(fmt.Sprintf("%03d-%s-b", id, name)))
	return hex.EncodeToString(a[:]) + hex.EncodeToString(b[:])
}

var seedOS = []OS{
	{Arch: "x86_64", Codename: "Jammy Jellyfish", Major: "22", Minor: "04", Name: "Ubuntu", Platform: "ubuntu", Uname: "Linux |%s |5.15.0-105-generic |#115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 |x86_64", Version: "22.04.4 LTS"},
	{Arch: "x86_64", Codename: "bookworm", Major: "12", Name: "Debian GNU/Linux", Platform: "debian", Uname: "Linux |%s |6.1.0-18-amd64 |#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) |x86_64", Version: "12"},
	{Arch: "x86_64", Major: "9", Minor: "3", Name: "Rocky Linux", Platform: "rocky", Uname: "Linux |%s |5.14.0-362.8.1.el9_3.x86_64 |#1 SMP PREEMPT_DYNAMIC Wed Nov 8 17:36:32 UTC 2023 |x86_64", Version: "9.3", Codename: "Blue Onyx"},
	{Arch: "x86_64", Major: "10", Minor: "0", Name: "Microsoft Windows Server 2019 Datacenter", Platform: "windows", Uname: "Microsoft Windows Server 2019 Datacenter", Version: "10.0.17763.5696"},
}

var seedNames = []struct {
	name, ip, conn, version string
	os                      int
	keepAliveAgo, addedAgo  time.Duration
}{
	{"web-01", "any", StatusActive, "Wazuh v4.8.2", 0, 0, 60 * 24 * time.Hour},
	{"db-01", "10.0.4.22", StatusActive, "Wazuh v4.9.0", 1, 0, 45 * 24 * time.Hour},
	{"app-01", "any", StatusDisconnected, "Wazuh v4.7.5", 2, 12 * 24 * time.Hour, 90 * 24 * time.Hour},
	{"mail-01", "10.0.4.30", StatusNeverConnected, "", 0, 0, 20 * 24 * time.Hour},
	{"win-01", "any", StatusActive, "Wazuh v4.9.0", 3, 0, 30 * 24 * time.Hour},
	{"backup-01", "10.0.4.41", StatusDisconnected, "Wazuh v4.9.0", 1, 2 * time.Hour, 10 * 24 * time.Hour},
}

// SeedAgents builds n deterministic agents (ids 001..n) with mixed statuses and versions no newer than
// 4.9.0. The first six are the hand-written lab set; the rest follow a 7 active / 2 disconnected /
// 1 never-connected pattern.
func SeedAgents(n int, now time.Time) []*Agent {
	out := make([]*Agent, 0, n+1)
	out = append(out, &Agent{ID: 0, RegisterIP: "127.0.0.1", Conn: StatusActive, DateAdd: now.Add(-100 * 24 * time.Hour).Unix()})
	versions := []string{"Wazuh v4.9.0", "Wazuh v4.8.2", "Wazuh v4.7.5"}
	for i := 1; i <= n; i++ {
		a := &Agent{ID: i, Group: []string{"default"}, Synced: true}
		if i <= len(seedNames) {
			s := seedNames[i-1]
			a.Name, a.RegisterIP, a.Conn, a.Version = s.name, s.ip, s.conn, s.version
			a.DateAdd = now.Add(-s.addedAgo).Unix()
			if s.conn == StatusDisconnected {
				a.LastKeepAlive = now.Add(-s.keepAliveAgo).Unix()
			}
			if s.conn != StatusNeverConnected {
				o := seedOS[s.os]
				a.OS = &o
			}
			a.IP = s.ip
			if s.ip == "any" {
				a.IP = fmt.Sprintf("10.0.4.%d", 20+i)
			}
		} else {
			a.Name = fmt.Sprintf("agent-%06d", i)
			a.RegisterIP = "any"
			a.IP = fmt.Sprintf("10.%d.%d.%d", 1+i/65536%200, i/256%256, i%256)
			a.DateAdd = now.Add(-time.Duration(1+i%90) * 24 * time.Hour).Unix()
			switch i % 10 {
			case 3, 7:
				a.Conn = StatusDisconnected
				a.LastKeepAlive = now.Add(-time.Duration(1+i%20) * 24 * time.Hour).Unix()
			case 9:
				a.Conn = StatusNeverConnected
			default:
				a.Conn = StatusActive
			}
			if a.Conn != StatusNeverConnected {
				a.Version = versions[i%len(versions)]
				o := seedOS[i%3]
				a.OS = &o
			}
		}
		if a.OS != nil && strings.Contains(a.OS.Uname, "%s") {
			a.OS.Uname = fmt.Sprintf(a.OS.Uname, a.Name)
		}
		if a.Conn == StatusNeverConnected {
			a.IP, a.Synced = "", false
			if a.RegisterIP != "any" {
				a.IP = a.RegisterIP
			}
		} else {
			a.ConfigSum = "ab73af41699f13fdd81903b5f23d8d00"
			a.MergedSum = "4a8e2c9b1f0e5d6c7b8a9f0e1d2c3b4a"
		}
		a.Key = agentKey(i, a.Name)
		out = append(out, a)
	}
	return out
}

// DefaultSeedAgents is how many agents a manager seeds by default (siem-managerd --seed-agents).
const DefaultSeedAgents = 5

// Seed writes n seeded agents unless a database exists (or replace is true).
func Seed(h Home, n int, replace bool, now time.Time) error { return SeedFrom(h, 1, n, replace, now) }

// SeedFrom seeds n agents from id first on (the seeded agents first..first+n-1: a worker of a
// distributed lab holds other ids than its master, as agent ids are the cluster's).
// A database an older emulator kept in var/db/agents.jsonl is moved where this one keeps it.
func SeedFrom(h Home, first, n int, replace bool, now time.Time) error {
	first = max(first, 1)
	if err := moveOldAgentsDB(h); err != nil {
		return err
	}
	s := NewAgentStore(h)
	return s.Update(func(cur []*Agent) ([]*Agent, bool, error) {
		if _, err := os.Stat(h.AgentsDB()); err == nil && !replace {
			return nil, false, nil
		}
		all := SeedAgents(first+n-1, now)
		out := all[:1]
		return append(out, all[first:]...), true, nil
	})
}

// moveOldAgentsDB moves the agents database of an older emulator (var/db/agents.jsonl) to
// queue/db/global.db unless that exists.
func moveOldAgentsDB(h Home) error {
	old := h.Path("var", "db", "agents.jsonl")
	if _, err := os.Stat(old); err != nil {
		return nil
	}
	if _, err := os.Stat(h.AgentsDB()); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.AgentsDB()), 0o750); err != nil {
		return fmt.Errorf("agents database: %w", err)
	}
	if err := os.Rename(old, h.AgentsDB()); err != nil {
		return fmt.Errorf("agents database: %w", err)
	}
	return nil
}

// SyncNodeAgents is the master's side of a worker's agent-info sync: the worker's agents replace
// that node's rows of this (the master's) database, with the node as their node_name, as the master's
// wazuh-db writes a worker's agent-info chunks into global.db. An id this node holds as its own stays
// its own; agent 000 is never synced. It writes only what changed.
func (s *AgentStore) SyncNodeAgents(node string, agents []*Agent) error {
	if node == "" {
		return nil
	}
	return s.Update(func(cur []*Agent) ([]*Agent, bool, error) {
		own := map[int]bool{}
		was := map[int]Agent{}
		out := make([]*Agent, 0, len(cur)+len(agents))
		for _, a := range cur {
			switch a.Node {
			case "":
				own[a.ID] = true
				out = append(out, a)
			case node:
				was[a.ID] = *a
			default:
				own[a.ID] = true // another worker's
				out = append(out, a)
			}
		}
		changed := false
		for _, a := range agents {
			if a == nil || a.ID <= 0 || own[a.ID] {
				continue
			}
			c := *a
			c.Node, c.Key = node, ""
			old, ok := was[c.ID]
			delete(was, c.ID)
			if !ok || !sameAgent(old, c) {
				changed = true
			}
			out = append(out, &c)
		}
		if len(was) > 0 {
			changed = true // agents the worker no longer has
		}
		return out, changed, nil
	})
}

// sameAgent compares two agent rows.
func sameAgent(a, b Agent) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
