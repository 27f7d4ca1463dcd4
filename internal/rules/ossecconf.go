package rules

import (
	"fmt"
	"os"
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
