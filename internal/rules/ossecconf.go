package rules

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ManagerCluster is the <cluster> section of an ossec.conf, as the manager reads it (the last
// section wins, like its own parser's repeated blocks).
type ManagerCluster struct {
	Found    bool   // a <cluster> section is there
	Name     string // <name>
	NodeName string // <node_name>
	NodeType string // <node_type>: master | worker
	Disabled bool   // <disabled>yes</disabled>
}

// ReadManagerCluster reads the <cluster> section of the ossec.conf at path with the manager's
// own XML rules (several <ossec_config> roots).
func ReadManagerCluster(path string) (ManagerCluster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ManagerCluster{}, err
	}
	top, err := parseXML(b)
	if err != nil {
		return ManagerCluster{}, fmt.Errorf("%s: %w", path, err)
	}
	var c ManagerCluster
	for _, root := range top {
		for _, sec := range root.children {
			if sec.name != "cluster" {
				continue
			}
			c.Found = true
			for _, e := range sec.children {
				v := strings.TrimSpace(e.text)
				switch e.name {
				case "name":
					c.Name = v
				case "node_name":
					c.NodeName = v
				case "node_type":
					c.NodeType = v
				case "disabled":
					c.Disabled = v == "yes"
				}
			}
		}
	}
	return c, nil
}

// AgentUpgrade is the <agent-upgrade> section of the manager's ossec.conf: how many agents its upgrade
// module sends a WPK to at once.
type AgentUpgrade struct {
	Found      bool
	MaxThreads int // <max_threads>: 8 by default, 0 one per core (at most 256)
}

// DefaultUpgradeThreads is the module's max_threads when ossec.conf does not set it.
const DefaultUpgradeThreads = 8

// ReadAgentUpgrade reads the <agent-upgrade> section of the ossec.conf at path (the last one wins);
// cores is the manager host's core count, what max_threads 0 means.
func ReadAgentUpgrade(path string, cores int) (AgentUpgrade, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return AgentUpgrade{MaxThreads: DefaultUpgradeThreads}, err
	}
	top, err := parseXML(b)
	if err != nil {
		return AgentUpgrade{MaxThreads: DefaultUpgradeThreads}, fmt.Errorf("%s: %w", path, err)
	}
	u := AgentUpgrade{MaxThreads: DefaultUpgradeThreads}
	for _, root := range top {
		for _, sec := range root.children {
			if sec.name != "agent-upgrade" {
				continue
			}
			u.Found = true
			for _, e := range sec.children {
				if e.name != "max_threads" {
					continue
				}
				n, err := strconv.Atoi(strings.TrimSpace(e.text))
				if err != nil || n < 0 || n > 256 {
					return u, fmt.Errorf("%s: <agent-upgrade><max_threads> %q: the manager wants 0 to 256", path, strings.TrimSpace(e.text))
				}
				u.MaxThreads = n
			}
		}
	}
	if u.MaxThreads == 0 {
		u.MaxThreads = min(max(cores, 1), 256)
	}
	return u, nil
}
