package secadmin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// TypeFailure is a configuration type the security init tool's -backup did
// not write, with the tool's reason.
type TypeFailure struct {
	Type   string `json:"type"` // config, roles, rolesmapping, internalusers, …, audit
	Reason string `json:"reason"`
	// Absent: the security index holds no document of the type (the tool's
	// "empty source" / "does not exist"): there is nothing live to keep.
	Absent bool `json:"absent"`
}

func (f TypeFailure) String() string { return f.Type + " (" + f.Reason + ")" }

// JoinFailures names type failures for a message, the types of one reason
// together ("config, roles (not retrieved: …)").
func JoinFailures(fs []TypeFailure) string {
	var s []string
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j].Reason == fs[i].Reason {
			j++
		}
		types := make([]string, 0, j-i)
		for _, f := range fs[i:j] {
			types = append(types, f.Type)
		}
		s = append(s, strings.Join(types, ", ")+" ("+fs[i].Reason+")")
		i = j
	}
	return strings.Join(s, ", ")
}

// TypeFiles are the files securityadmin -backup writes, by configuration
// type (its backup(): config.yml … audit.yml; whitelist before 2.x).
var TypeFiles = map[string]string{
	"config": "config.yml", "roles": "roles.yml", "rolesmapping": "roles_mapping.yml", "internalusers": "internal_users.yml",
	"actiongroups": "action_groups.yml", "tenants": "tenants.yml", "nodesdn": "nodes_dn.yml", "allowlist": "allowlist.yml",
	"whitelist": "whitelist.yml", "audit": "audit.yml",
}

// backupTypes are the types securityadmin -backup retrieves, in its order.
var backupTypes = []string{"config", "roles", "rolesmapping", "internalusers", "actiongroups", "tenants", "nodesdn", "allowlist", "audit"}

var (
	// securityadmin's retrieveFile lines (OpenSearch security plugin, SecurityAdmin.java)
	failEmpty    = regexp.MustCompile(`FAIL: Configuration for '([a-z]+)' failed because of empty source`)
	failNotExist = regexp.MustCompile(`FAIL: Get configuration for '([a-z]+)' because it does not exist`)
	failGet      = regexp.MustCompile(`FAIL: Get configuration for '([a-z]+)' failed because of (.+)`)
	failYAML     = regexp.MustCompile(`ERR: (?:YML conversion error for ([a-z]+)|Seems ([a-z]+) from cluster is not in .*)`)
	// "<index> index does not exists, attempt to create it ... done (0-all replicas)"
	indexCreated = regexp.MustCompile(`index does not exists, attempt to create it`)
)

// backupFailures reads the types a -backup run did not write from its lines.
func backupFailures(lines []string) (failed []TypeFailure, created bool) {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if indexCreated.MatchString(l) {
			created = true
		} else if m := failEmpty.FindStringSubmatch(l); m != nil {
			failed = append(failed, TypeFailure{Type: m[1], Reason: "empty source: the security index holds none", Absent: true})
		} else if m := failNotExist.FindStringSubmatch(l); m != nil {
			failed = append(failed, TypeFailure{Type: m[1], Reason: "does not exist in the security index", Absent: true})
		} else if m := failGet.FindStringSubmatch(l); m != nil {
			failed = append(failed, TypeFailure{Type: m[1], Reason: clipReason(m[2])})
		} else if m := failYAML.FindStringSubmatch(l); m != nil {
			failed = append(failed, TypeFailure{Type: m[1] + m[2], Reason: clipReason(strings.TrimPrefix(l, "ERR: "))})
		}
	}
	return failed, created
}

// dropEmpty removes the empty files of the types a backup into dir did not
// write: the tool opens the file before it reads, and an empty file would
// pass for an empty configuration.
func dropEmpty(dir string, failed []TypeFailure) {
	for _, f := range failed {
		if TypeFiles[f.Type] == "" {
			continue
		}
		p := filepath.Join(dir, TypeFiles[f.Type])
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
			_ = os.Remove(p)
		}
	}
}

func clipReason(s string) string {
	if len(s) > 200 {
		return s[:197] + "..."
	}
	return s
}

// Live is the live security configuration as the apply found it: backed up
// into Backup (what the tool could write) and compared with the files.
type Live struct {
	Backup   string     `json:"backup"`
	Result   InitResult `json:"-"`
	Removals []Removal  `json:"removals"`
	// Absent are the types the security index holds no document of (a
	// brand-new or never initialised cluster: audit, or every type when the
	// index was missing): nothing live to keep.
	Absent []TypeFailure `json:"absent"`
	// Unread are the types that exist and could not be read: their live
	// objects are unseen and not in the backup.
	Unread []TypeFailure `json:"unread"`
	// IndexCreated: the security index did not exist (not initialised); the
	// tool created it, empty, before its backup.
	IndexCreated bool `json:"index_created"`
}

// Blind are the unread types whose file the apply uploads (the type's file
// is in filesDir): applying would overwrite live objects no backup holds.
func (l Live) Blind(filesDir string) []TypeFailure {
	var out []TypeFailure
	for _, f := range l.Unread {
		name := TypeFiles[f.Type]
		if name == "" {
			out = append(out, f)
			continue
		}
		if _, err := os.Stat(filepath.Join(filesDir, name)); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// LiveBackup backs the live security configuration up into dir with the
// security init tool and compares it with the files of filesDir. A backup
// that wrote only part of the configuration is not an error here: the
// types the index lacks are Absent, the ones that could not be read Unread
// (Blind tells which the apply would overwrite unseen). A tool that read
// nothing (it could not connect, its certificate was refused) leaves every
// type it did not name Unread with the tool's last line as the reason. Errors are the
// tool not configured or not runnable and a backup that does not parse.
func LiveBackup(ctx context.Context, run Runner, tool []string, dir, filesDir string) (Live, error) {
	res, err := Backup(ctx, run, tool, dir)
	l := Live{Backup: dir, Result: res, Absent: []TypeFailure{}, Unread: []TypeFailure{}, Removals: []Removal{}}
	var te *ToolError
	if err != nil && !errors.As(err, &te) {
		return l, err
	}
	failed, created := res.NotStored, res.IndexCreated
	l.IndexCreated = created
	for _, f := range failed {
		if f.Absent {
			l.Absent = append(l.Absent, f)
		} else {
			l.Unread = append(l.Unread, f)
		}
	}
	if te != nil {
		// the tool failed: a type it neither wrote nor named was not read
		// (it could not connect, its certificate was refused, it stopped)
		why := "not retrieved: the tool failed"
		if len(te.Lines) > 0 {
			why += ": " + clipReason(te.Lines[len(te.Lines)-1])
		}
		for _, t := range backupTypes {
			if !slices.Contains(res.Stored, t) && !slices.ContainsFunc(failed, func(f TypeFailure) bool { return f.Type == t }) {
				l.Unread = append(l.Unread, TypeFailure{Type: t, Reason: why})
			}
		}
	}
	rs, err := Compare(dir, filesDir)
	if err != nil {
		return l, err
	}
	if rs != nil {
		l.Removals = rs
	}
	return l, nil
}

// BackupFailedError: the live configuration could not be backed up in
// full, the apply would overwrite what was not, and overwriting it was not
// asked for. Nothing was changed (exit 3, no-go).
type BackupFailedError struct {
	Blind    []TypeFailure
	Stored   []string
	Backup   string
	FilesDir string
}

func (e *BackupFailedError) Error() string {
	got := "nothing"
	if len(e.Stored) > 0 {
		got = strings.Join(e.Stored, ", ") + " in " + e.Backup
	}
	files := make([]string, 0, len(e.Blind))
	for _, f := range e.Blind {
		if n := TypeFiles[f.Type]; n != "" && !slices.Contains(files, n) {
			files = append(files, n)
		}
	}
	return fmt.Sprintf("the live security configuration could not be backed up in full: %s; applying the files of %s would overwrite it (%s) with no copy of what is live, and any user, role or mapping made through the security REST API would be lost; nothing was changed (backed up: %s). "+
		"Make the backup work (siemctl health --check indexer.api,certs says whether the indexer answers and its certificates hold; `siemctl security indexer backup DIR` shows the tool's own lines), then apply again; or apply knowingly without that copy: add --remove-live-objects (the files win)",
		JoinFailures(e.Blind), e.FilesDir, strings.Join(files, ", "), got)
}
