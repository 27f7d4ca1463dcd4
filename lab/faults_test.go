package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type nopEmu struct{ Emulators }

func TestFaultKindParsing(t *testing.T) {
	full := &Lab{core: core{st: &State{Units: Profiles["siem"].Units()}, prof: Profiles["siem"], emu: nopEmu{}}}
	indexerOnly := &Lab{core: core{st: &State{Units: Profiles["siem"].Units()[:1]}, prof: Profiles["siem"]}}
	tests := []struct {
		name    string
		l       *Lab
		kind    string
		wantArg string
		wantErr bool
		unknown bool
	}{
		{"unit short name", full, "unit-stopped:shipper", "shipper.service", false, false},
		{"unit full name", full, "unit-stopped:siem-manager.service", "siem-manager.service", false, false},
		{"unit not in lab", indexerOnly, "unit-stopped:shipper", "", true, false},
		{"unit missing arg", full, "unit-stopped", "", true, true},
		{"cluster-red", indexerOnly, "cluster-red", "", false, false},
		{"shipper fault needs the shipper", indexerOnly, "shipper-output-unreachable", "", true, false},
		{"shipper stalled", full, "shipper-stalled", "", false, false},
		{"arg on plain kind", full, "cluster-red:x", "", true, true},
		{"emulator fault without emulators", indexerOnly, "api-slow", "", true, false},
		{"emulator fault", full, "api-ratelimit", "", false, false},
		{"unknown", full, "disk-empty", "", true, true},
		{"disk full", full, "disk-full", "", false, false},
		{"port held", indexerOnly, "port-held", "", false, false},
		{"unit flapping", full, "unit-flapping:siem-dashboard", "siem-dashboard.service", false, false},
		{"unit flapping missing arg", full, "unit-flapping", "", true, true},
		{"alerts stopped", full, "alerts-stopped", "", false, false},
		{"agents no reconnect needs the emulators", indexerOnly, "agents-no-reconnect", "", true, false},
		{"no WPK for some platforms", full, "upgrade-no-wpk:windows,ubuntu/aarch64", "windows,ubuntu/aarch64", false, false},
		{"no WPK for every platform", full, "upgrade-no-wpk", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, arg, err := tt.l.faultKind(tt.kind)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if errors.Is(err, ErrUnknownFault) != tt.unknown {
				t.Errorf("unknown = %v, want %v (%v)", errors.Is(err, ErrUnknownFault), tt.unknown, err)
			}
			if arg != tt.wantArg {
				t.Errorf("arg = %q, want %q", arg, tt.wantArg)
			}
		})
	}
}

// Every fault kind `siemlab fault --list` prints is one a full lab accepts (a unit kind with a
// unit), listed once; every kind docs/lab.md's siemlab block documents is among them.
func TestListedFaultKindsAreAccepted(t *testing.T) {
	full := &Lab{core: core{st: &State{Units: Profiles["siem"].Units()}, prof: Profiles["siem"], emu: nopEmu{}}}
	listed := map[string]bool{}
	for _, k := range FaultKinds() {
		if listed[k.Name] {
			t.Errorf("%s listed twice", k.Name)
		}
		listed[k.Name] = true
		kind := strings.Replace(k.Name, "<unit>", "siem-manager", 1)
		got, _, err := full.faultKind(kind)
		if err != nil || got.Name != k.Name {
			t.Errorf("siemlab fault %s: %v (kind %q)", kind, err, got.Name)
		}
		if k.Description == "" {
			t.Errorf("%s has no help line", k.Name)
		}
	}
	readme, err := os.ReadFile("../docs/lab.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "siemlab fault --dir DIR ")
	block, _, _ = strings.Cut(block, "siemlab filebeat")
	if !ok || block == "" {
		t.Fatal("docs/lab.md has no siemlab fault block")
	}
	documented := regexp.MustCompile(`[a-z]+(?:-[a-z]+)+(?::<unit>)?`).FindAllString(block, -1)
	if len(documented) < 2 {
		t.Fatalf("docs/lab.md documents no fault kinds: %q", block)
	}
	for _, d := range documented {
		if !listed[d] {
			t.Errorf("docs/lab.md documents fault %s, siemlab fault --list does not list it", d)
		}
	}
}

// A config fault keeps the original once (breaking twice keeps the first original), a heal puts it
// back with its mode and forgets it, and a second heal has nothing to restore.
func TestBreakAndRestoreConfig(t *testing.T) {
	dir := t.TempDir()
	l := &Lab{core: core{st: &State{Dir: dir}}}
	conf := filepath.Join(dir, "root", "etc", "ossec.conf")
	orig := []byte("<ossec_config/>\n")
	if err := writeFile(conf, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	breakIt := func(b []byte) ([]byte, error) { return append([]byte("broken "), b...), nil }
	for range 2 {
		if err := l.breakConfig(conf, 0o640, breakIt); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, []byte("broken broken <ossec_config/>\n")) {
		t.Fatalf("broken config = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "faults", "ossec.conf.orig")); !bytes.Equal(got, orig) {
		t.Fatalf("saved original = %q, want the first original %q", got, orig)
	}

	refuse := errors.New("nothing to break")
	if err := l.breakConfig(conf, 0o640, func([]byte) ([]byte, error) { return nil, refuse }); !errors.Is(err, refuse) {
		t.Fatalf("breakConfig error = %v, want %v", err, refuse)
	}

	if err := l.restoreConfig(conf, 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conf); !bytes.Equal(got, orig) || fi.Mode().Perm() != 0o640 {
		t.Fatalf("restored config = %q mode %v, want %q mode 0640", got, fi.Mode().Perm(), orig)
	}
	if _, err := os.Stat(l.savedConfig(conf)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("saved original still there after the heal: %v", err)
	}
	if err := l.restoreConfig(conf, 0o640); err == nil {
		t.Fatal("a second heal restored something")
	}
	if err := l.breakConfig(filepath.Join(dir, "missing.yml"), 0o600, breakIt); err == nil {
		t.Fatal("breakConfig of a missing file succeeded")
	}
}

// recordingEmu records the emulator faults set; kind "api-slow" fails.
type recordingEmu struct {
	Emulators
	calls []string
}

func (e *recordingEmu) SetFault(_, kind string, on bool) error {
	e.calls = append(e.calls, fmt.Sprintf("%s=%v", kind, on))
	if kind == "api-slow" {
		return errors.New("faults dir read-only")
	}
	return nil
}

// Fault records the kind in lab.json once (a second fault of a kind does not repeat it), Heal
// forgets it; a failed fault or heal says which and records nothing.
func TestFaultAndHealRecordState(t *testing.T) {
	emu := &recordingEmu{}
	l := &Lab{core: core{st: &State{Dir: t.TempDir(), Units: Profiles["siem"].Units()}, prof: Profiles["siem"], emu: emu}}
	ctx := context.Background()
	recorded := func() []string {
		t.Helper()
		st, err := readState(l.st.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return st.Faults
	}
	for _, k := range []string{"alerts-stopped", "agent-newer", "alerts-stopped"} {
		if err := l.Fault(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if got := recorded(); !slices.Equal(got, []string{"alerts-stopped", "agent-newer"}) {
		t.Fatalf("faults after injecting = %v", got)
	}
	if err := l.Heal(ctx, "alerts-stopped"); err != nil {
		t.Fatal(err)
	}
	if got := recorded(); !slices.Equal(got, []string{"agent-newer"}) {
		t.Fatalf("faults after a heal = %v", got)
	}
	if err := l.Fault(ctx, "api-slow"); err == nil || err.Error() != "fault api-slow: faults dir read-only" {
		t.Fatalf("failed fault: %v", err)
	}
	if err := l.Heal(ctx, "api-slow"); err == nil || err.Error() != "heal api-slow: faults dir read-only" {
		t.Fatalf("failed heal: %v", err)
	}
	if got := recorded(); !slices.Equal(got, []string{"agent-newer"}) {
		t.Fatalf("faults after failures = %v", got)
	}
	want := []string{"alerts-stopped=true", "agent-newer=true", "alerts-stopped=true", "alerts-stopped=false", "api-slow=true", "api-slow=false"}
	if !slices.Equal(emu.calls, want) {
		t.Fatalf("emulator calls %v, want %v", emu.calls, want)
	}
}

// upgrade-no-wpk:PLATFORM hands its platforms to the emulator's marker; heal clears it.
func TestFaultNoWPKPerPlatform(t *testing.T) {
	emu := &recordingEmu{}
	l := &Lab{core: core{st: &State{Dir: t.TempDir(), Units: Profiles["siem"].Units()}, prof: Profiles["siem"], emu: emu}}
	if err := l.Fault(context.Background(), "upgrade-no-wpk:windows"); err != nil {
		t.Fatal(err)
	}
	if err := l.Heal(context.Background(), "upgrade-no-wpk:windows"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(emu.calls, " "); got != "upgrade-no-wpk:windows=true upgrade-no-wpk:windows=false" {
		t.Errorf("emulator calls: %s", got)
	}
}
