package packages

import (
	"strings"

	"github.com/siemctl/siemctl/internal/process"
)

// Runner runs one program (see process.Runner).
type Runner = process.Runner

// ExecRunner runs programs with os/exec (see process.ExecRunner).
type ExecRunner = process.ExecRunner

// Command is one program invocation, as it runs or would run (dry-run).
type Command struct {
	Env  []string // extra environment (NAME=value) on top of the inherited one
	Argv []string
}

// String renders the command as a shell line, quoting where needed.
func (c Command) String() string {
	parts := make([]string, 0, len(c.Env)+len(c.Argv))
	for _, e := range c.Env {
		parts = append(parts, shellQuote(e))
	}
	for _, a := range c.Argv {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
