package configcmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cli/clitest"
	"github.com/siemctl/siemctl/internal/config"
	"github.com/siemctl/siemctl/internal/golden"
	"github.com/siemctl/siemctl/internal/output"
)

func run(t *testing.T, outputFmt string, env []string, args ...string) (string, error) {
	t.Helper()
	path := clitest.WriteConfig(t, t.TempDir(), "indexer:\n  url: https://10.0.0.5:9200\n  password_command: [/usr/bin/pass, show, siem/indexer]\n")
	ios, _, out, _ := output.Test()
	f := cli.NewFactory(ios, nil)
	f.Global.Output = outputFmt
	f.Config = func() (*config.Config, error) {
		return config.Load(config.LoadOptions{Path: path, ExplicitPath: true, Env: env})
	}
	err := clitest.Exec(NewCmdView(f, nil), args...)
	return strings.ReplaceAll(out.String(), filepath.Dir(path), "DIR"), err
}

func TestView(t *testing.T) {
	out, err := run(t, "table", []string{"SIEMCTL_MANAGER_API_URL=https://mgr.example:55000"}, "indexer", "manager.api_url", "profile")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "view", []byte(out))
	out, err = run(t, "json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []config.Setting
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) < 40 {
		t.Fatalf("json: %v (%d rows)", err, len(rows))
	}
	if _, err := run(t, "table", nil, "nosuchsection"); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "siemctl help config") {
		t.Errorf("unknown key prefix: %v", err)
	}
}
