package labcli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/siemctl/siemctl/lab/bench"
)

// benchCmd: siemlab bench floor|cluster, the lines `make bench-upgrade` prints from the tables its
// drivers (scripts/bench-upgrade.sh, scripts/bench-upgrade-cluster.sh) wrote.
func benchCmd(stdout io.Writer) *cobra.Command {
	b := &cobra.Command{
		Use:   "bench floor|cluster",
		Short: "Print the upgrade benchmark's lines from the tables make bench-upgrade wrote",
	}
	floor := &cobra.Command{
		Use:   "floor RESULTS BARE RETRIES FIRST MODES",
		Short: "siemctl's upgrade against the bare upgrade: floor, growth and ratio per volume",
		Long: `floor reads bench-upgrade.sh's tables: RESULTS (results.tsv: volume, MODE#N, data_MiB, indices,
upgrade_s, rollback_s), BARE (bare.tsv: volume, MODE#N, bare_s, back_copy_s, sec_retry) and RETRIES
(retries.tsv: run, sec_retry). FIRST is the smallest volume (the growth lines count from it), MODES
the number of data-safety modes measured. It prints, per volume (and mode, with more than one):
  floor: <volume> siemctl <s>s bare <s>s ratio <r>×
  growth: <volume> siemctl +<s>s bare +<s>s ratio <r>×
then the same over the upgrades where the security plugin's first load was not retried, and in how
many upgrades it was.`,
		Args: cobra.ExactArgs(5),
		RunE: func(cmd *cobra.Command, args []string) error {
			modes, err := strconv.Atoi(args[4])
			if err != nil || modes < 1 {
				return fmt.Errorf("%w: MODES %q: want a whole number from 1", errUsage, args[4])
			}
			out, err := bench.Floor(bench.FloorInput{Results: args[0], Bare: args[1], Retries: args[2], First: args[3], Modes: modes})
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, out)
			return err
		},
	}
	cluster := &cobra.Command{
		Use:   "cluster TSV",
		Short: "The rolling upgrade against plain restarts: per host floor and turn, the roll's ratio, the flow and the searches",
		Long: `cluster reads bench-upgrade-cluster.sh's table (what, name, value) and prints per host its plain restart
(floor) beside its turn in the roll, the roll against the sum of the floors with siemctl's own
share, the events lost and duplicated, and the share of searches answered with every shard.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := bench.Cluster(args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, out)
			return err
		},
	}
	b.AddCommand(floor, cluster)
	return b
}
