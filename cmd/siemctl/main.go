// Command siemctl checks, upgrades and rolls back a SIEM stack, on one host or node by node across a distributed deployment.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/siemctl/siemctl/internal/cli"
	"github.com/siemctl/siemctl/internal/cmd/register"
	"github.com/siemctl/siemctl/internal/factory"
	"github.com/siemctl/siemctl/internal/output"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{IO: output.System(), Env: os.Environ(), Wire: factory.Wire}, register.All)
	stop()
	os.Exit(code)
}
