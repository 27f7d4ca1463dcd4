package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/siemctl/siemctl/internal/engine"
	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/output"
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

func runProbe(ctx context.Context, env Env, _ *noParams) (engine.Outcome, error) {
	d := env.Deps()
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
		return engine.Outcome{}, notAnswering("indexer", err)
	}
	if n == 0 {
		return engine.Outcome{}, engine.Pending("probe %s not searchable yet (sent %d times)", st.Marker(), st.Tries)
	}
	return engine.Outcome{Message: fmt.Sprintf("probe %s searchable %s after it was sent", st.Marker(), now.Sub(st.Sent).Round(time.Millisecond))}, nil
}
