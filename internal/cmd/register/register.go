// Package register adds every command group to the root command.
package register

import (
	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/internal/cli"
	agentscmd "github.com/siemctl/siemctl/internal/cmd/agents"
	alertscmd "github.com/siemctl/siemctl/internal/cmd/alerts"
	"github.com/siemctl/siemctl/internal/cmd/configcmd"
	"github.com/siemctl/siemctl/internal/cmd/health"
	indexercmd "github.com/siemctl/siemctl/internal/cmd/indexer"
	rollbackcmd "github.com/siemctl/siemctl/internal/cmd/rollback"
	rulescmd "github.com/siemctl/siemctl/internal/cmd/rules"
	securitycmd "github.com/siemctl/siemctl/internal/cmd/security"
	servicescmd "github.com/siemctl/siemctl/internal/cmd/services"
	snapshotcmd "github.com/siemctl/siemctl/internal/cmd/snapshot"
	upgradecmd "github.com/siemctl/siemctl/internal/cmd/upgrade"
)

// All registers the command groups.
func All(root *cobra.Command, f *cli.Factory) {
	root.AddCommand(health.NewCmdHealth(f, nil))
	root.AddCommand(alertscmd.NewCmdAlerts(f))
	root.AddCommand(rulescmd.NewCmdRules(f))
	root.AddCommand(agentscmd.NewCmdAgents(f))
	root.AddCommand(indexercmd.NewCmdIndexer(f))
	root.AddCommand(snapshotcmd.NewCmdSnapshot(f))
	root.AddCommand(servicescmd.NewCmdServices(f))
	root.AddCommand(securitycmd.NewCmdSecurity(f))
	root.AddCommand(upgradecmd.NewCmdUpgrade(f))
	root.AddCommand(rollbackcmd.NewCmdRollback(f, nil))
	root.AddCommand(configcmd.NewCmdConfig(f))
}
