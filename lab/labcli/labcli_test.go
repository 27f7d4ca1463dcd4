package labcli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

func TestMain_Usage(t *testing.T) {
	emuCalls := []string{}
	deps := Deps{EmuMain: func(_ context.Context, name string, args []string, _ io.Reader, stdout, _ io.Writer) int {
		emuCalls = append(emuCalls, name+" "+strings.Join(args, " "))
		io.WriteString(stdout, "emu ran")
		if name == "fail" {
			return 3
		}
		return 0
	}}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"fault list", []string{"fault", "--list"}, 0, "cluster-red", ""},
		{"heal list", []string{"heal", "--list"}, 0, "unit-stopped:<unit>", ""},
		{"up without dir", []string{"up"}, 2, "", "--dir is required"},
		{"up with an unknown profile", []string{"up", "--dir", "/nonexistent-siemlab", "--profile", "elk"}, 2, "", `unknown profile "elk" (known: siem, wazuh)`},
		{"down without dir", []string{"down"}, 2, "", "--dir is required"},
		{"flow probe without dir", []string{"flow", "probe"}, 2, "", "--dir is required"},
		{"flow probe every 0", []string{"flow", "probe", "--dir", "/nonexistent-siemlab", "--every", "0s"}, 2, "", "--every 0s: want a positive interval"},
		{"fault without kind", []string{"fault", "--dir", "/nonexistent"}, 2, "", "exactly one fault KIND"},
		{"status of no lab", []string{"status", "--dir", "/nonexistent-siemlab"}, 1, "", "no lab in this directory"},
		{"emu dispatch", []string{"emu", "siem-control", "status", "-x"}, 0, "emu ran", ""},
		{"emu exit code", []string{"emu", "fail"}, 3, "emu ran", ""},
		{"unknown command", []string{"frobnicate"}, 1, "", "unknown command"},
		{"bench floor with modes 0", []string{"bench", "floor", "r", "b", "t", "small", "0"}, 2, "", `MODES "0": want a whole number from 1`},
		{"bench floor of missing tables", []string{"bench", "floor", "/nonexistent-siemlab/r.tsv", "b", "t", "small", "1"}, 1, "", "/nonexistent-siemlab/r.tsv"},
		{"bench cluster of a missing table", []string{"bench", "cluster", "/nonexistent-siemlab/cluster.tsv"}, 1, "", "/nonexistent-siemlab/cluster.tsv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb, deps)
			if code != tt.code {
				t.Errorf("code = %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Errorf("stdout = %q, want %q", out.String(), tt.stdout)
			}
			if !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("stderr = %q, want %q", errb.String(), tt.stderr)
			}
		})
	}
	if len(emuCalls) != 2 || emuCalls[0] != "siem-control status -x" {
		t.Errorf("emu calls = %q", emuCalls)
	}
}
