package services

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/netclient"
	"github.com/siemctl/siemctl/internal/ops/diagnose"
	"github.com/siemctl/siemctl/internal/units"
	"github.com/siemctl/siemctl/internal/units/unitstest"
)

// certReport is the diagnosis of an indexer whose node certificate expired.
var certReport = diagnose.Report{Component: "indexer", Unit: "siem-indexer.service", Findings: []diagnose.Finding{{
	Kind:  diagnose.KindCertificate,
	Cause: "indexer certificate /etc/siem-indexer/certs/indexer.pem expired on 2026-10-29 (30 days ago); the shipper and dashboard reject it",
	Fix:   "renew it: issue a certificate …, replace /etc/siem-indexer/certs/indexer.pem (and its key …), then siemctl services restart indexer"}}}

// movedPort is the diagnosis of an indexer that runs on another port than indexer.url's.
var movedPort = diagnose.Report{Component: "indexer", Unit: "siem-indexer.service", Findings: []diagnose.Finding{{
	Kind:  diagnose.KindHTTPPort,
	Cause: "the indexer listens on port 9201 (http.port in /etc/siem-indexer/opensearch.yml) and siemctl's indexer.url https://127.0.0.1:9200 asks port 9200",
	Fix:   "set http.port: 9200 in /etc/siem-indexer/opensearch.yml again and siemctl services restart indexer; or …"}}}

var stillStarting = diagnose.Report{Component: "indexer", Unit: "siem-indexer.service", Findings: []diagnose.Finding{{
	Kind: diagnose.KindStillStarting, Cause: "siem-indexer.service is still starting (active/running) and does not answer yet", Fix: "wait for it"}}}

// The end of the readiness wait: the diagnosis's cause reaches the start's
// error (a certificate that will not do, a port held, …) and the start has
// failed (not ErrStillStarting: exit 1); a start with no cause found is
// still starting (ErrStillStarting: exit 8), and its error says so too.
// A cause with a class (a moved port: siemctl's config) carries it.
func TestReadinessTimeoutNamesTheCause(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	unreachable := &netclient.Error{Op: "GET /", URL: "https://127.0.0.1:9200", Kind: netclient.ErrUnreachable}
	for _, tt := range []struct {
		name         string
		rep          diagnose.Report
		still        bool
		wantInErr    []string
		notWantInErr string
		class        error
	}{
		{"certificate", certReport, false, []string{"does not answer within 1m0s", "expired on 2026-10-29", "fix: renew it", "replace /etc/siem-indexer/certs/indexer.pem"}, "still starting", nil},
		{"no cause", stillStarting, true, []string{"does not answer within 1m0s", "is still starting", "fix: wait for it"}, "", nil},
		{"port moved", movedPort, false, []string{"does not answer within 1m0s", "listens on port 9201", "fix: set http.port: 9200"}, "still starting", diagnose.ErrConfigMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			sleeps := 0
			var diagnosed []units.UnitStatus
			r := &Runner{Units: f,
				Ready: func(context.Context, Component) error { return unreachable },
				Sleep: func(context.Context, time.Duration) error {
					if sleeps++; sleeps > 3 {
						return context.DeadlineExceeded
					}
					return nil
				},
				Diagnose: func(_ context.Context, _ Component, st units.UnitStatus) diagnose.Report {
					diagnosed = append(diagnosed, st)
					return tt.rep
				}}
			outs, err := r.Start(context.Background(), comps)
			if err == nil {
				t.Fatal("a start that does not answer succeeded")
			}
			for _, w := range tt.wantInErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if tt.notWantInErr != "" && strings.Contains(err.Error(), tt.notWantInErr) {
				t.Errorf("error says %q: %v", tt.notWantInErr, err)
			}
			if got := errors.Is(err, ErrStillStarting); got != tt.still {
				t.Errorf("errors.Is(err, ErrStillStarting) = %v, want %v", got, tt.still)
			}
			if errors.Is(err, netclient.ErrUnreachable) {
				t.Errorf("the probe's unreachable leaks into the start's error (exit 5): %v", err)
			}
			for _, class := range []error{diagnose.ErrConfigMismatch, diagnose.ErrAccessDenied} {
				if got := errors.Is(err, class); got != (class == tt.class) {
					t.Errorf("errors.Is(err, %v) = %v, want %v", class, got, class == tt.class)
				}
			}
			var de *DiagnosedError
			if !errors.As(err, &de) || de.Report.Cause().Kind != tt.rep.Cause().Kind {
				t.Errorf("no diagnosis in the error: %#v", err)
			}
			if len(diagnosed) != 1 || !diagnosed[0].IsActive() {
				t.Errorf("diagnosed %v, want once, the running unit", diagnosed)
			}
			if outs[0].Result != ResultFailed || outs[0].Diagnosis == nil || outs[0].Diagnosis.Summary() != tt.rep.Summary() {
				t.Errorf("outcome %+v", outs[0])
			}
		})
	}
}

// An indexer that answers with a certificate its clients refuse (expired,
// foreign CA, not its key's) fails the start at once with that cause; one
// refused only by siemctl's own trust (no certificate finding) answers:
// ready, and the health checks judge siemctl's ca_file.
func TestReadinessCertificateRefused(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	tlsErr := &netclient.Error{Op: "GET /", URL: "https://127.0.0.1:9200", Kind: netclient.ErrTLS, Err: errors.New("x509: certificate has expired or is not yet valid")}
	for _, tt := range []struct {
		name  string
		rep   diagnose.Report
		fails bool
	}{
		{"the component's certificate", certReport, true},
		{"siemctl's trust only", diagnose.Report{Findings: []diagnose.Finding{}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			looks := 0
			r := &Runner{Units: f, Sleep: noSleep,
				Ready:    func(context.Context, Component) error { looks++; return tlsErr },
				Diagnose: func(context.Context, Component, units.UnitStatus) diagnose.Report { return tt.rep }}
			_, err := r.Start(context.Background(), comps)
			if looks != 1 {
				t.Errorf("Ready asked %d times: a TLS answer ends the wait", looks)
			}
			if !tt.fails {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrCertificateRefused) || errors.Is(err, ErrStillStarting) || errors.Is(err, netclient.ErrTLS) ||
				!strings.Contains(err.Error(), "expired on 2026-10-29") || !strings.Contains(err.Error(), "fix: renew it") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// Answers: a 401 is an answer; a TLS refusal goes to the runner, which
// asks the diagnosis whose fault the certificate is.
func TestAnswers(t *testing.T) {
	for _, tt := range []struct {
		kind  error
		ready bool
	}{
		{netclient.ErrUnauthorized, true},
		{netclient.ErrTLS, false},
		{netclient.ErrUnreachable, false},
		{netclient.ErrNotReady, false},
	} {
		if got := Answers(&netclient.Error{Op: "GET /", Kind: tt.kind}) == nil; got != tt.ready {
			t.Errorf("Answers(%v) ready %v, want %v", tt.kind, got, tt.ready)
		}
	}
}

// slowUnits: systemd's start job has not finished when the wait ends (a
// slow ExecStartPre, a loaded host): the unit is still activating.
type slowUnits struct{ *unitstest.Fake }

func (s slowUnits) StartAndWait(_ context.Context, u string, _ time.Duration) (units.UnitStatus, error) {
	st := units.UnitStatus{Name: u, LoadState: "loaded", ActiveState: units.Activating, SubState: "start-pre"}
	s.Set(st)
	return st, &units.StateError{Unit: u, Want: []string{units.Active}, Status: st, Kind: units.ErrWaitTimeout}
}

// A unit still activating at the end of the wait is diagnosed on what there
// is: a cause fails the start (exit 1), none leaves it still starting (8).
func TestStillActivatingIsDiagnosed(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	for _, tt := range []struct {
		rep   diagnose.Report
		still bool
	}{{certReport, false}, {stillStarting, true}} {
		var diagnosed []units.UnitStatus
		r := &Runner{Units: slowUnits{unitstest.NewFake()}, Sleep: noSleep,
			Ready: func(context.Context, Component) error { t.Error("Ready asked before the unit is active"); return nil },
			Diagnose: func(_ context.Context, _ Component, st units.UnitStatus) diagnose.Report {
				diagnosed = append(diagnosed, st)
				return tt.rep
			}}
		_, err := r.Start(context.Background(), comps)
		if err == nil || errors.Is(err, ErrStillStarting) != tt.still || !strings.Contains(err.Error(), "not active within 1m0s") ||
			!strings.Contains(err.Error(), tt.rep.Summary()) {
			t.Errorf("%s: err %v (still starting %v)", tt.rep.Cause().Kind, err, errors.Is(err, ErrStillStarting))
		}
		if len(diagnosed) != 1 || diagnosed[0].ActiveState != units.Activating {
			t.Errorf("diagnosed %v", diagnosed)
		}
	}
}

// portReport is the diagnosis of a port another process holds (python's
// http.server on the indexer's port, made by hand in the lab).
var portReport = diagnose.Report{Component: "indexer", Unit: "siem-indexer.service", Findings: []diagnose.Finding{{Kind: diagnose.KindPortBound,
	Cause: "port 9200 already bound by pid 2353 (/usr/bin/python3 -m http.server 9200 --bind 127.0.0.1)",
	Fix:   "stop pid 2353 (/usr/bin/python3 -m http.server 9200 --bind 127.0.0.1) or move it off port 9200 (indexer needs it: http.port in /etc/siem-indexer/opensearch.yml), then siemctl services start indexer"}}}

// Ready means the component answers as itself: a foreign server on its
// port (plain HTTP on the TLS port, or an answer that is not the node's)
// fails the start at once with the port's holder; an answer not the
// component's with no foreign holder keeps the wait going (it is not ready).
func TestReadinessNotItself(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"indexer"})
	tlsErr := &netclient.Error{Op: "GET /", URL: "https://127.0.0.1:9200", Kind: netclient.ErrTLS, Err: errors.New("tls: first record does not look like a TLS handshake")}
	notIt := fmt.Errorf("%w: GET / answered as cluster \"other\"", ErrNotItself)
	for _, tt := range []struct {
		name  string
		probe error
		rep   diagnose.Report
		fails bool
	}{
		{"plain HTTP on the TLS port", tlsErr, portReport, true},
		{"an answer not the node's, port held", notIt, portReport, true},
		{"an answer not the node's, no holder found", notIt, diagnose.Report{Findings: []diagnose.Finding{}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := unitstest.NewFake()
			looks := 0
			// the wait's end (1ms) ends the sleep
			sleep := func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() }
			r := &Runner{Units: f, Sleep: sleep, Waits: map[string]time.Duration{"indexer": time.Millisecond},
				Ready:    func(context.Context, Component) error { looks++; return tt.probe },
				Diagnose: func(context.Context, Component, units.UnitStatus) diagnose.Report { return tt.rep }}
			_, err := r.Start(context.Background(), comps)
			if err == nil {
				t.Fatal("a start whose address answers as something else succeeded")
			}
			if tt.fails {
				if looks != 1 || errors.Is(err, ErrStillStarting) || !strings.Contains(err.Error(), "already bound by pid 2353") {
					t.Fatalf("looks %d err %v", looks, err)
				}
				return
			}
			if !errors.Is(err, ErrStillStarting) && !strings.Contains(err.Error(), "not as the component") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// A probe that names a refusal (the shipper's output: 401) fails the start
// at once with that cause as its diagnosis, and the error's class (exit 4).
func TestReadinessRefused(t *testing.T) {
	comps, _, _ := Select(unitMap, []string{"shipper"})
	f := unitstest.NewFake()
	looks, diagnosed := 0, 0
	r := &Runner{Units: f, Sleep: noSleep,
		Ready: func(context.Context, Component) error {
			looks++
			return &RefusedError{Cause: "its output https://127.0.0.1:9200 refuses the shipper's output credentials (401 Unauthorized)", Err: netclient.ErrUnauthorized, Fix: "keystore add password"}
		},
		Diagnose: func(context.Context, Component, units.UnitStatus) diagnose.Report {
			diagnosed++
			return diagnose.Report{}
		}}
	outs, err := r.Start(context.Background(), comps)
	if looks != 1 || diagnosed != 0 || !errors.Is(err, netclient.ErrUnauthorized) || errors.Is(err, ErrStillStarting) {
		t.Fatalf("looks %d diagnosed %d err %v", looks, diagnosed, err)
	}
	if d := outs[0].Diagnosis; d == nil || d.Cause().Kind != diagnose.KindRefused || d.Fix() != "keystore add password" {
		t.Fatalf("diagnosis %+v", d)
	}
	if strings.Count(err.Error(), "refuses the shipper's") != 1 {
		t.Errorf("cause said twice: %v", err)
	}
}
