package dashboard

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// How the real OpenSearch Dashboards dies at its start, for the emulator to die the same way.

// fatal prints a fatal start error as the real server does: its JSON log record (tags fatal,
// root; the legacy logger writes JSON when stdout is not a terminal) and the bootstrap's
// " FATAL  <reason>" mirror on stderr (src/core/server/bootstrap.ts onRootShutdown).
func fatal(stdout, stderr io.Writer, reason string) {
	rec, _ := json.Marshal(map[string]any{"type": "log", "@timestamp": time.Now().UTC().Format(time.RFC3339), "tags": []string{"fatal", "root"},
		"pid": os.Getpid(), "message": reason})
	fmt.Fprintf(stdout, "%s\n", rec)
	fmt.Fprintf(stderr, "\n FATAL  %s\n\n", reason)
}

// nodeError is err as Node's fs reports a file it cannot open:
// "Error: ENOENT: no such file or directory, open '/etc/wazuh-dashboard/certs/dashboard-key.pem'".
func nodeError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(pe.Err, syscall.ENOENT):
			return fmt.Sprintf("Error: ENOENT: no such file or directory, %s '%s'", pe.Op, pe.Path)
		case errors.Is(pe.Err, syscall.EACCES):
			return fmt.Sprintf("Error: EACCES: permission denied, %s '%s'", pe.Op, pe.Path)
		case errors.Is(pe.Err, syscall.EISDIR):
			return fmt.Sprintf("Error: EISDIR: illegal operation on a directory, read '%s'", pe.Path)
		}
	}
	return "Error: " + err.Error()
}

// loadKeyPair reads the key, then the certificate (the real SslConfig's order).
func loadKeyPair(keyFile, certFile string) (tls.Certificate, error) {
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

// YAMLError is a config file the real server's js-yaml cannot load.
type YAMLError struct {
	Path string
	Line int
	Msg  string
	Text string // the line's text
}

func (e *YAMLError) Error() string {
	return fmt.Sprintf("parse config %s: %s at line %d", e.Path, e.Msg, e.Line)
}

// goYAMLLine is go-yaml's "yaml: line 3: …" or "yaml: unmarshal errors:\n  line 14: …".
var (
	goYAMLLine = regexp.MustCompile(`(?m)line (\d+): (.*)$`)
	goDupKey   = regexp.MustCompile(`^mapping key ".*" already defined at line \d+$`)
)

func newYAMLError(path string, b []byte, err error) error {
	m := goYAMLLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("parse config %s: %w", path, err)
	}
	n, _ := strconv.Atoi(m[1])
	e := &YAMLError{Path: path, Line: n, Msg: m[2]}
	if goDupKey.MatchString(e.Msg) {
		e.Msg = "duplicated mapping key" // js-yaml's words
	}
	if lines := strings.Split(string(b), "\n"); n >= 1 && n <= len(lines) {
		e.Text = lines[n-1]
	}
	return e
}

// Print writes Node's report of the uncaught YAMLException, as the journal of a real
// wazuh-dashboard shows it (wazuh/wazuh#16470, #23125): it names the line, not the file.
func (e *YAMLError) Print(w io.Writer, home string) {
	loader := home + "/node_modules/js-yaml/lib/js-yaml/loader.js"
	text := e.Text
	if len(text) > 40 {
		text = text[:33] + " ..."
	}
	fmt.Fprintf(w, "%s:173\n  throw generateError(state, message);\n  ^\nYAMLException: %s at line %d, column 1:\n    %s\n    ^\n", loader, e.Msg, e.Line, text)
	fmt.Fprintf(w, "    at generateError (%s:167:10)\n    at throwError (%s:173:9)\n    at readBlockMapping (%s:1073:9)\n", loader, loader, loader)
}
