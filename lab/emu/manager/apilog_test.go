package manager

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAPILog: every request, answered or refused, is one line of logs/api.log in wazuh-apid's plain
// format, with the user, the client, the method and path, the query parameters and the status.
func TestAPILog(t *testing.T) {
	f := newAPI(t, 10, nil)
	tok := f.login("siem", "siem")
	f.do("GET", "/agents?limit=2&select=status", tok, "")
	f.do("PUT", "/agents/upgrade?agents_list=001,002", tok, "")
	f.do("GET", "/agents", "", "")
	f.do("GET", "/nowhere", tok, "")
	b, err := os.ReadFile(f.home.APILog())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	want := []string{
		`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d INFO: siem 127\.0\.0\.1 "POST /security/user/authenticate" with parameters \{"raw": "true"\} and body \{\} done in \d+\.\d{3}s: 200$`,
		`^\S+ \S+ INFO: siem 127\.0\.0\.1 "GET /agents" with parameters \{"limit": "2", "select": "status"\} and body \{\} done in \d+\.\d{3}s: 200$`,
		`^\S+ \S+ INFO: siem 127\.0\.0\.1 "PUT /agents/upgrade" with parameters \{"agents_list": "001,002"\} and body \{\} done in \S+: 200$`,
		`^\S+ \S+ INFO: unknown_user 127\.0\.0\.1 "GET /agents" with parameters \{\} and body \{\} done in \S+: 401$`,
		`^\S+ \S+ INFO: unknown_user 127\.0\.0\.1 "GET /nowhere" with parameters \{\} and body \{\} done in \S+: 404$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("api.log has %d lines, want %d:\n%s", len(lines), len(want), b)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], re)
		}
	}
}
