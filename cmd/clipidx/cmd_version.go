package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use:   "version",
			Short: "Print the clipidx version",
			Long: `Print the clipidx version: the module version when installed as a module,
else "(devel)" with the commit it was built from, when the build recorded one
(go build in a git clone does; "+modified" when the tree had uncommitted
changes), and the Go version.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				bi, _ := debug.ReadBuildInfo()
				v := versionOf(bi)
				if asJSON {
					return json.NewEncoder(cmd.OutOrStdout()).Encode(v)
				}
				fmt.Fprintln(cmd.OutOrStdout(), v.String())
				return nil
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON: version, commit, commit_time, modified, go")
		return c
	})
}

// buildVersion is what a binary says of its build.
type buildVersion struct {
	Version    string `json:"version"`               // module version, or "(devel)"
	Commit     string `json:"commit,omitempty"`      // vcs.revision
	CommitTime string `json:"commit_time,omitempty"` // vcs.time, RFC 3339
	Modified   bool   `json:"modified"`              // built from a tree with uncommitted changes; always printed
	Go         string `json:"go,omitempty"`
}

func versionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: "(devel)"}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	v.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is "clipidx VERSION (commit 1a2b3c4d5e6f, 2026-12-03T21:00:00Z,
// +modified; go1.26.8)", the parts the build recorded.
func (v buildVersion) String() string {
	s := "clipidx " + v.Version
	var parts []string
	if v.Commit != "" {
		c := "commit " + v.Commit[:min(12, len(v.Commit))]
		if v.CommitTime != "" {
			c += ", " + v.CommitTime
		}
		if v.Modified {
			c += ", +modified"
		}
		parts = append(parts, c)
	}
	if v.Go != "" {
		parts = append(parts, v.Go)
	}
	for i, p := range parts {
		if i == 0 {
			s += " ("
		} else {
			s += "; "
		}
		s += p
	}
	if len(parts) > 0 {
		s += ")"
	}
	return s
}
