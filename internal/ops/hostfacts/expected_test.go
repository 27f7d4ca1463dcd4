package hostfacts

import (
	"slices"
	"strings"
	"testing"

	"github.com/siemctl/siemctl/internal/ops/verdict"
)

// One table for the ports verdict; the health check "ports" and the gate
// gate.ports both map it.
func TestExpectedAndJudgePorts(t *testing.T) {
	urls := map[string]string{"indexer": "https://127.0.0.1:9200", "manager API": "https://localhost:55000", "dashboard": "https://0.0.0.0"}
	tests := []struct {
		name       string
		urls       map[string]string
		fixed      map[string]int
		listening  map[int]bool
		want       string // every expected port, "!" before a missing one
		wantRemote string
	}{
		{"all listening", urls, map[string]int{"manager agents": 1514, "manager enrollment": 1515},
			map[int]bool{443: true, 1514: true, 1515: true, 9200: true, 55000: true},
			"443 (dashboard) 1514 (manager agents) 1515 (manager enrollment) 9200 (indexer) 55000 (manager API)", ""},
		{"manager API down", urls, map[string]int{"manager agents": 1514},
			map[int]bool{443: true, 1514: true, 9200: true},
			"443 (dashboard) 1514 (manager agents) 9200 (indexer) !55000 (manager API)", ""},
		// A port that is not configured (0) is not expected.
		{"unset ports are not expected", urls, map[string]int{"manager agents": 0, "manager enrollment": 0},
			map[int]bool{443: true, 9200: true, 55000: true},
			"443 (dashboard) 9200 (indexer) 55000 (manager API)", ""},
		// An indexer on another host never listens here: noted, not judged.
		{"remote indexer", map[string]string{"indexer": "https://10.0.0.5:9200", "dashboard": "http://[::1]"}, nil,
			map[int]bool{}, "!80 (dashboard)", "indexer at 10.0.0.5:9200 is not on this host: not checked"},
		{"unparsable URL skipped", map[string]string{"indexer": "://bad", "manager API": ""}, map[string]int{"manager agents": 1514},
			map[int]bool{1514: true}, "1514 (manager agents)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, remote := Expected(tt.urls, tt.fixed)
			v := JudgePorts(want, remote, tt.listening)
			var got []string
			for _, p := range v.Ports {
				s := p.String()
				if !p.Listening {
					s = "!" + s
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tt.want || strings.Join(v.Remote, "|") != tt.wantRemote {
				t.Errorf("got %q remote %q\nwant %q remote %q", got, v.Remote, tt.want, tt.wantRemote)
			}
			// The verdict: Wait naming each missing port, with a restart of its component.
			var missing []string
			for _, g := range got {
				if m, ok := strings.CutPrefix(g, "!"); ok {
					missing = append(missing, m)
				}
			}
			switch {
			case v.OK() != (len(missing) == 0) || !slices.Equal(v.Items, missing):
				t.Errorf("verdict %+v, missing %q", v.Verdict, missing)
			case len(missing) > 0 && (v.Level != verdict.Wait || v.Summary != "not listening: "+strings.Join(missing, ", ") || !strings.HasPrefix(v.Fix, "siemctl services restart ")):
				t.Errorf("verdict %+v", v.Verdict)
			case len(missing) == 0 && !strings.HasPrefix(v.Summary, "listening: "):
				t.Errorf("verdict %+v", v.Verdict)
			}
		})
	}
	if c := (ExpectedPort{Port: 1514, Owner: "manager agents"}).Component(); c != "manager" {
		t.Errorf("component %q", c)
	}
}
