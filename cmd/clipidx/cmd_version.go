package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the clipidx version",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				v := "(devel)"
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
					v = bi.Main.Version
				}
				fmt.Fprintln(cmd.OutOrStdout(), "clipidx", v)
				return nil
			},
		}
	})
}
