package steps_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/ops/probe"
	"github.com/siemctl/siemctl/internal/steps"
)

// TestNewDeps: a client that could not be built leaves a nil interface
// (never a typed nil) beside its error, and the probe's report becomes the
// kinds' result with the slowest hop as its latency.
func TestNewDeps(t *testing.T) {
	down := errors.New("password file missing")
	d := steps.NewDeps(nil, nil, steps.Clients{IndexerErr: down, ManagerErr: down, PackageErr: down, ShipperErr: down,
		Probe: func(context.Context) (probe.Report, error) {
			return probe.Report{OK: false, Nonce: "n1", BrokenAt: "indexer", Hops: []probe.Hop{
				{Name: "manager", State: probe.StateOK, Latency: 2 * time.Second}, {Name: "indexer", Latency: 30 * time.Second}}}, nil
		}})
	if d.Indexer != nil || d.Manager != nil || d.Packages != nil || d.Shipper != nil || d.Units != nil {
		t.Fatalf("typed nils leaked: %#v %#v %#v %#v", d.Indexer, d.Manager, d.Packages, d.Shipper)
	}
	if d.IndexerErr != down || d.ManagerErr != down || d.PackageErr != down || d.ShipperErr != down {
		t.Fatal("client errors lost")
	}
	res, err := d.Probe(context.Background())
	if err != nil || res.OK || res.Nonce != "n1" || res.BrokenAt != "indexer" || res.Latency() != 30*time.Second {
		t.Fatalf("probe = %+v, %v", res, err)
	}
	if d.Ports == nil || d.Disk == nil || d.Dashboard == nil || d.Exec == nil {
		t.Fatal("host facts not wired")
	}
}
