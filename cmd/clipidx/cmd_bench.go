package main

import "github.com/spf13/cobra"

// benchCommands registers `clipidx bench X` subcommands (cmd_bench_*.go).
var benchCommands []func() *cobra.Command

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		c := &cobra.Command{
			Use:   "bench",
			Short: "Measure this machine: model passes, builds, search latency",
		}
		for _, mk := range benchCommands {
			c.AddCommand(mk())
		}
		return c
	})
}
