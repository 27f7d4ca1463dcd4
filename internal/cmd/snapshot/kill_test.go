package snapshot

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/siemctl/siemctl/internal/snapshot"
	"github.com/siemctl/siemctl/internal/testenv"
)

const killEnv = "SIEMCTL_SNAPSHOT_KILL_CONFIG"

// hangingSource is the real Source whose health part announces itself and
// hangs (the process is killed there).
type hangingSource struct{ snapshot.Source }

func (h hangingSource) Health(ctx context.Context) ([]snapshot.HealthResult, error) {
	fmt.Println("READY")
	os.Stdout.Sync() //nolint:errcheck
	time.Sleep(time.Hour)
	return nil, ctx.Err()
}

// TestHelperKilledCapture is not a test: run as a subprocess by
// killCaptureHelper, it captures with a Source that hangs until killed.
func TestHelperKilledCapture(t *testing.T) {
	cfg := os.Getenv(killEnv)
	if cfg == "" {
		t.Skip("helper process only")
	}
	fs := &fakeStack{Config: cfg}
	f, _, _ := testFactory(t, fs)
	opts := captureOpts(f, "doomed", &seqRand{n: 200})
	opts.Source = func(st *snapshot.Live) snapshot.Source { return hangingSource{goldenSource(f)(st)} }
	opts.Timeout = time.Hour
	_ = runCapture(context.Background(), opts)
	t.Fatal("capture completed although it should have been killed")
}

// killCaptureHelper runs a capture of fs in a child process and SIGKILLs it
// in the middle.
func killCaptureHelper(t *testing.T, fs *fakeStack) {
	t.Helper()
	testenv.KillHelperAt(t, "TestHelperKilledCapture", killEnv+"="+fs.Config, "READY\n", "the capture")
}
