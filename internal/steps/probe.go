package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
	"github.com/siemctl/siemctl/internal/rundata"
)

// probeResend is how long the fallback probe waits for its event before it
// sends another one (UDP may drop a datagram; the manager may have been
// restarting).
const probeResend = 30 * time.Second

// probeState is the fallback probe's run data (not secret: a nonce): the
// event is sent again, unchanged, while it is not searchable.
type probeState struct {
	probe.Event
	Sent  time.Time `json:"sent"`
	Tries int       `json:"tries"`
}

func describeProbe(pl *Planning) []string {
	to, prefix := "<manager.syslog, or {manager.install_dir}/queue/sockets/queue>", "<alerts prefix>"
	if c := pl.cfg(); c != nil {
		to, prefix = probe.NewTarget(c.Manager.Syslog, c.Manager.InstallDir).String(), c.Indexer.AlertsIndexPrefix
	}
	return []string{
		"send \"sshd[…]: " + (probe.Event{Nonce: "<nonce>", Host: 1, Port: 4242}).Line() + "\" to " + to,
		"POST /" + prefix + "*/_count " + (probe.Event{Nonce: "<nonce>"}).Query() + " until it is searchable",
	}
}

// probeKinds is probe.send; gate.probe is among the gates.
func probeKinds() []Kind {
	return []Kind{
		engine.Define(Spec[*noParams]{Name: "probe.send", Estimate: fixed[*noParams](0), Run: runProbeSend,
			New: simple(func(pl *Planning) []string {
				return []string{describeProbe(pl)[0] + " now, and journal it (run data " + rundata.KeyProbeAhead + ")",
					"gate.probe follows it instead of sending its own; a send that fails here leaves gate.probe to send its own"}
			}),
			Skip: func(_ context.Context, env Env, _ *noParams) (string, bool, error) {
				if d := env.Deps(); d.ProbeSend == nil || d.ProbeFollow == nil {
					return "no data-flow probe here: gate.probe sends its own event", true, nil
				}
				return "", false, nil
			}}),
	}
}

// probeAhead is the run data of an event probe.send sent ahead.
type probeAhead struct {
	probe.Sent
	Step string `json:"step"` // the step that sent it
}

// runProbeSend is probe.send: the upgrade sends the data-flow probe's event
// once the new manager runs and before the shipper starts, so that its alert
// is in the alerts file when the new shipper starts and reads it at once; the
// data-flow gate then follows it. A shipper that starts with nothing to read
// backs off (1 s, 2 s, 4 s … between reads) and the refresh interval comes on
// top: the gate's own event took 2 to 7 s to become searchable. A failed
// send is not this step's failure: the gate sends its own and names the hop
// that broke.
func runProbeSend(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	sent, err := d.ProbeSend(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return engine.Outcome{}, ctx.Err()
		}
		env.Logger().Warn("data-flow probe not sent ahead", "err", d.redact(err.Error()))
		return engine.Outcome{Message: "not sent ahead (" + d.redact(err.Error()) + "): the data-flow gate sends its own"}, nil
	}
	if err := env.Set(rundata.KeyProbeAhead, probeAhead{Sent: sent, Step: env.StepID()}); err != nil {
		return engine.Outcome{}, err
	}
	return engine.Outcome{Message: fmt.Sprintf("probe %s sent: its alert waits for the shipper's start; the data-flow gate follows it", sent.Nonce)}, nil
}

// followAhead follows the event probe.send sent, for probeResend at most; an
// event that did not arrive (a datagram lost, a manager that was still
// starting) is dropped from the run data, so that the gate's next polls send
// their own.
func followAhead(ctx context.Context, env Env, d *Deps) (engine.Outcome, bool, error) {
	var ahead probeAhead
	if ok, err := env.Get(rundata.KeyProbeAhead, &ahead); err != nil || !ok || ahead.Nonce == "" || d.ProbeFollow == nil {
		return engine.Outcome{}, false, err
	}
	fctx, cancel := context.WithTimeout(ctx, probeResend)
	res, err := d.ProbeFollow(fctx, ahead.Sent)
	cancel()
	if ctx.Err() != nil {
		return engine.Outcome{}, false, ctx.Err()
	}
	if err == nil && res.OK {
		return engine.Outcome{Message: fmt.Sprintf("probe %s (sent by %s) searchable after %s", res.Nonce, ahead.Step, res.Latency().Round(time.Millisecond))}, true, nil
	}
	why := "not searchable"
	if err != nil {
		why = d.redact(err.Error())
	} else if res.BrokenAt != "" {
		why = "broken at " + res.BrokenAt + ": " + res.Detail
	}
	env.Logger().Warn("the probe sent ahead did not arrive; sending another", "nonce", ahead.Nonce, "why", why)
	return engine.Outcome{}, false, env.Set(rundata.KeyProbeAhead, probeAhead{})
}

func runProbe(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
	if out, ok, err := followAhead(ctx, env, d); ok || err != nil {
		return out, err
	}
	if d.Probe != nil {
		res, err := d.Probe(ctx)
		if err != nil {
			return engine.Outcome{}, engine.Pending("probe: %v", err)
		}
		if !res.OK {
			return engine.Outcome{}, engine.Pending("probe %s did not arrive (broken at %s) %s", res.Nonce, output.Dash(res.BrokenAt), res.Detail)
		}
		return engine.Outcome{Message: fmt.Sprintf("probe %s searchable after %s", res.Nonce, res.Latency().Round(time.Millisecond))}, nil
	}
	return fallbackProbe(ctx, env, d)
}

// fallbackProbe sends a tagged event and counts it in the alerts indices;
// its state survives polls (and resumes) in the run data.
func fallbackProbe(ctx context.Context, env Env, d *Deps) (engine.Outcome, error) {
	ix, err := d.indexer()
	if err != nil {
		return engine.Outcome{}, err
	}
	if d.Config == nil {
		return engine.Outcome{}, errors.New("no configuration: the data-flow probe has nowhere to send its event")
	}
	target := probe.NewTarget(d.Config.Manager.Syslog, d.Config.Manager.InstallDir)
	if err := target.Validate(); err != nil {
		return engine.Outcome{}, err
	}
	target.Hostname = "siemctl"
	key := "probe:" + env.StepID()
	var st probeState
	if _, err := env.Get(key, &st); err != nil {
		return engine.Outcome{}, err
	}
	now := d.now()
	if st.Nonce == "" || now.Sub(st.Sent) >= probeResend {
		switch {
		case st.Nonce == "":
			if st.Event, err = probe.NewEvent(nil); err != nil {
				return engine.Outcome{}, err
			}
		case st.Port == 0: // recorded by an earlier siemctl: nonce only
			st.Host, st.Port = 1, 4242
		}
		if err := st.Send(ctx, target, now); err != nil {
			return engine.Outcome{}, engine.Pending("%v", err)
		}
		st.Sent, st.Tries = now, st.Tries+1
		if err := env.Set(key, st); err != nil {
			return engine.Outcome{}, err
		}
	}
	n, err := ix.Count(ctx, d.Config.Indexer.AlertsIndexPrefix+"*", st.Query(), time.Time{})
	if err != nil {
		return engine.Outcome{}, notAnswering(ctx, d, "indexer", "indexer", err)
	}
	if n == 0 {
		return engine.Outcome{}, engine.Pending("probe %s not searchable yet (sent %d times)", st.Marker(), st.Tries)
	}
	return engine.Outcome{Message: fmt.Sprintf("probe %s searchable %s after it was sent", st.Marker(), now.Sub(st.Sent).Round(time.Millisecond))}, nil
}
