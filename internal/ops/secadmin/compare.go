package secadmin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ObjectFiles are the security configuration files whose top-level keys are
// objects created through the security REST API (internalusers, roles,
// rolesmapping, actiongroups, tenants): an apply of the files removes
// every object of the live configuration that the file lacks.
var ObjectFiles = []string{"internal_users.yml", "roles.yml", "roles_mapping.yml", "action_groups.yml", "tenants.yml"}

// Removal is an object of the live security configuration that applying
// the files would remove.
type Removal struct {
	File string `json:"file"` // internal_users.yml, roles.yml, …
	Name string `json:"name"`
}

func (r Removal) String() string { return strings.TrimSuffix(r.File, ".yml") + " " + r.Name }

// RemovedError: the apply would remove objects of the live configuration
// and removing them was not asked for. Nothing was changed (exit 3, no-go).
type RemovedError struct {
	Removals []Removal
	Backup   string // the live configuration's backup
	FilesDir string // the security configuration files
}

func (e *RemovedError) Error() string {
	return fmt.Sprintf("applying %s would remove %d object(s) created through the security REST API since the files were written: %s; nothing was changed. "+
		"Keep them: copy their entries from the live configuration's backup %s into the files of %s (or `siemctl security indexer backup %s` makes the files the live configuration), then apply; remove them knowingly: add --remove-live-objects",
		e.FilesDir, len(e.Removals), JoinRemovals(e.Removals), e.Backup, e.FilesDir, e.FilesDir)
}

// JoinRemovals names removals for a message ("internal_users alice, roles ops").
func JoinRemovals(rs []Removal) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// Compare lists the objects of the live configuration (a backup in live)
// that the files in filesDir lack, file by file in ObjectFiles' order and
// by name. A file missing from live holds nothing to lose; one missing
// from filesDir is left alone by the tool (the type is not uploaded). A
// file that does not parse is an error: the comparison would be blind.
func Compare(live, filesDir string) ([]Removal, error) {
	var out []Removal
	for _, f := range ObjectFiles {
		have, err := objectNames(filepath.Join(live, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("live configuration: %w", err)
		}
		want, err := objectNames(filepath.Join(filesDir, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, n := range have {
			if !slices.Contains(want, n) {
				out = append(out, Removal{File: f, Name: n})
			}
		}
	}
	return out, nil
}

// objectNames are the top-level keys of a security YAML file but _meta,
// sorted.
func objectNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]yaml.Node
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []string
	for k := range m {
		if k != "_meta" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}
