package steps_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/rundata"
	"github.com/siemctl/siemctl/internal/steps"
)

// probeHooks are fake probe hooks: what was sent ahead, followed and probed.
type probeHooks struct {
	sendErr   error
	followOK  bool
	sent      []probe.Sent
	followed  []probe.Sent
	ownProbes int
}

func (h *probeHooks) install(d *steps.Deps) {
	d.ProbeSend = func(context.Context) (probe.Sent, error) {
		if h.sendErr != nil {
			return probe.Sent{}, h.sendErr
		}
		s := probe.Sent{Event: probe.Event{Nonce: "0123456789ab", Host: 7, Port: 4242}, At: time.Now().UTC(), AlertsOffset: 512}
		h.sent = append(h.sent, s)
		return s, nil
	}
	d.ProbeFollow = func(_ context.Context, s probe.Sent) (probe.Report, error) {
		h.followed = append(h.followed, s)
		if !h.followOK {
			return probe.Report{Nonce: s.Nonce, BrokenAt: probe.BrokenShipper, Detail: "not searchable after 30s"}, nil
		}
		return probe.Report{OK: true, Nonce: s.Nonce, Hops: []probe.Hop{{Name: probe.HopIndexer, State: probe.StateOK, Latency: 2500 * time.Millisecond}}}, nil
	}
	d.Probe = func(context.Context) (probe.Report, error) {
		h.ownProbes++
		return probe.Report{OK: true, Nonce: "ffffffffffff", Hops: []probe.Hop{{Name: probe.HopIndexer, State: probe.StateOK, Latency: 6 * time.Second}}}, nil
	}
}

// TestProbeSentAhead: probe.send sends the data-flow probe's event before the
// shipper starts and journals it; gate.probe follows that event instead of
// sending its own. An event that does not arrive is dropped and the gate sends
// its own; a send that fails is not the step's failure.
func TestProbeSentAhead(t *testing.T) {
	t.Run("followed", func(t *testing.T) {
		h := &probeHooks{followOK: true}
		d := depsWith(testConfig(t, ""), nil)
		h.install(d)
		e := newEnv(d, nil)
		out, err := run(t, d, e, "probe.send", nil)
		if err != nil || !strings.Contains(out.Message, "probe 0123456789ab sent") {
			t.Fatalf("probe.send: %q %v", out.Message, err)
		}
		var ahead struct {
			probe.Sent
			Step string `json:"step"`
		}
		if ok, err := e.Get(rundata.KeyProbeAhead, &ahead); !ok || err != nil || ahead.Sent != h.sent[0] || ahead.Step != "test/step" {
			t.Fatalf("journaled %+v (%v %v), want %+v sent by test/step", ahead, ok, err, h.sent[0])
		}
		out, err = run(t, d, e, "gate.probe", nil)
		if err != nil || out.Message != "probe 0123456789ab (sent by test/step) searchable after 2.5s" {
			t.Fatalf("gate.probe: %q %v", out.Message, err)
		}
		if len(h.followed) != 1 || h.followed[0] != h.sent[0] || h.ownProbes != 0 {
			t.Errorf("followed %+v, own probes %d: want the event sent ahead followed and none of its own", h.followed, h.ownProbes)
		}
	})
	t.Run("lost: the gate sends its own, once", func(t *testing.T) {
		h := &probeHooks{}
		d := depsWith(testConfig(t, ""), nil)
		h.install(d)
		e := newEnv(d, nil)
		if _, err := run(t, d, e, "probe.send", nil); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			out, err := run(t, d, e, "gate.probe", nil)
			if err != nil || !strings.Contains(out.Message, "probe ffffffffffff searchable") {
				t.Fatalf("gate.probe: %q %v", out.Message, err)
			}
		}
		if len(h.followed) != 1 || h.ownProbes != 2 {
			t.Errorf("followed %d times, own probes %d: want 1 follow, then the gate's own", len(h.followed), h.ownProbes)
		}
	})
	t.Run("send fails", func(t *testing.T) {
		h := &probeHooks{sendErr: errors.New("send the probe to /var/ossec/queue/sockets/queue: nothing reads the socket")}
		d := depsWith(testConfig(t, ""), nil)
		h.install(d)
		e := newEnv(d, nil)
		out, err := run(t, d, e, "probe.send", nil)
		if err != nil || !strings.Contains(out.Message, "not sent ahead (send the probe to") || !strings.Contains(out.Message, "the data-flow gate sends its own") {
			t.Fatalf("probe.send: %q %v", out.Message, err)
		}
		if _, err := run(t, d, e, "gate.probe", nil); err != nil || len(h.followed) != 0 || h.ownProbes != 1 {
			t.Errorf("gate.probe: %v, followed %d, own %d", err, len(h.followed), h.ownProbes)
		}
	})
	t.Run("no probe hooks: skipped", func(t *testing.T) {
		d := depsWith(testConfig(t, ""), nil)
		out, err := run(t, d, newEnv(d, nil), "probe.send", nil)
		if err != nil || !strings.HasPrefix(out.Message, "SKIPPED: no data-flow probe here") {
			t.Fatalf("%q %v", out.Message, err)
		}
	})
}
