// Package ansible ships siemctl's Ansible playbooks, the fleet driver of a distributed
// deployment's rolling upgrade (installed by the .deb and .rpm under /usr/share/siemctl/ansible/).
// siemctl keeps the roll's order and state in the indexer cluster; a playbook only brings each
// host its turn.
package ansible

import (
	"embed"
	"io/fs"
	"sort"
)

// Files holds the playbooks and the task files they include (tasks/).
//
//go:embed *.yml tasks/*.yml
var Files embed.FS

// Dir is where the packages install the playbooks.
const Dir = "/usr/share/siemctl/ansible"

// Playbooks lists the playbook file names, sorted.
func Playbooks() []string {
	names, _ := fs.Glob(Files, "*.yml")
	sort.Strings(names)
	return names
}

// All lists every file the packages install (the playbooks, then the included task files under
// tasks/), as paths relative to Dir, sorted.
func All() []string {
	tasks, _ := fs.Glob(Files, "tasks/*.yml")
	sort.Strings(tasks)
	return append(Playbooks(), tasks...)
}
