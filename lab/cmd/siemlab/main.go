// Command siemlab brings up a real single-host SIEM stack for siemctl's tests and demo. Called by an
// emulator program's name (siem-managerd, siem-control, agent_control, manage_agents, siem-dashboard)
// it runs that emulator instead: the packages ship this binary under those names.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args)
	stop()
	os.Exit(code)
}
