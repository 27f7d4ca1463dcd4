package lab

import (
	"errors"
	"testing"
)

type nopEmu struct{ Emulators }

func TestFaultKindParsing(t *testing.T) {
	full := &Lab{st: &State{Units: Profiles["siem"].Units()}, prof: Profiles["siem"], emu: nopEmu{}}
	indexerOnly := &Lab{st: &State{Units: Profiles["siem"].Units()[:1]}, prof: Profiles["siem"]}
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
		{"unknown", full, "disk-full", "", true, true},
		{"unit flapping", full, "unit-flapping:siem-dashboard", "siem-dashboard.service", false, false},
		{"unit flapping missing arg", full, "unit-flapping", "", true, true},
		{"alerts stopped", full, "alerts-stopped", "", false, false},
		{"agents no reconnect needs the emulators", indexerOnly, "agents-no-reconnect", "", true, false},
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
	if len(FaultKinds()) != 17 {
		t.Errorf("%d fault kinds", len(FaultKinds()))
	}
}
