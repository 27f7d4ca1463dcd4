package manager

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// ---- manager and cluster ----

func (s *APIServer) handleManagerInfo(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	now := s.o.Now()
	name, off := now.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	item := orderedObject{{"path", s.o.Home.Dir}, {"version", s.version().Tag}, {"type", "server"},
		{"max_agents", "unlimited"}, {"openssl_support", "yes"},
		{"tz_offset", fmt.Sprintf("%c%02d%02d", sign, off/3600, off%3600/60)}, {"tz_name", name}}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "Basic information was successfully read", "", "Could not read basic information"))
}

func (s *APIServer) handleManagerStatus(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	states := DaemonStates(s.o.Home)
	item := orderedObject{}
	for _, d := range apiDaemons {
		item = append(item, kvAny{d, states[d]})
	}
	writeJSON(w, r, 200, affected([]any{item}, 1, &failures{}, "Processes status was successfully read", "", "Could not read basic information"))
}

// ValidateInstall runs the configuration test the daemons run with -t (ossec.conf and local rules).
func ValidateInstall(h Home) error {
	b, err := os.ReadFile(h.OssecConf())
	if err != nil {
		return &ConfigError{Lines: []string{confDaemon + ": ERROR: (1103): Could not open file '" + confRelPath + "' due to [(2)-(No such file or directory)].",
			confDaemon + ": CRITICAL: (1202): Configuration error at '" + confRelPath + "'."}}
	}
	if _, err := ParseConfig(b); err != nil {
		return err
	}
	local, err := LoadLocalRules(h.LocalRules(), "etc/rules/local_rules.xml")
	if err != nil {
		return err
	}
	if _, err := NewRuleset(local); err != nil {
		return &ConfigError{Lines: []string{confDaemon + ": ERROR: (1220): Error loading the rules: " + err.Error() + ".",
			confDaemon + ": CRITICAL: (1220): Error loading the rules: 'etc/rules/local_rules.xml'."}}
	}
	return nil
}

func (s *APIServer) handleValidation(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	var fails failures
	items := []any{}
	if err := ValidateInstall(s.o.Home); err != nil {
		var ce *ConfigError
		msg := err.Error()
		if errors.As(err, &ce) {
			msg = strings.Join(ce.Messages(), ", ")
		}
		fails.add(werr(1908, msg), "manager")
	} else {
		items = append(items, orderedObject{{"name", "manager"}, {"status", "OK"}})
	}
	writeJSON(w, r, 200, affected(items, len(items), &fails, "Validation was successfully checked", "", "Could not check validation"))
}

func (s *APIServer) handleClusterStatus(w http.ResponseWriter, r *http.Request) {
	if !checkParams(w, r) {
		return
	}
	enabled, running := "no", "no"
	if c, err := s.loadConfig(); err == nil && !c.ClusterDisabled {
		enabled = "yes"
	}
	if s.o.Cluster != nil {
		running = "yes"
	}
	writeJSON(w, r, 200, orderedObject{{"data", orderedObject{{"enabled", enabled}, {"running", running}}}, {"error", 0}})
}
