package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/clipidx/clipidx/clipnpu"
)

// modelRandomResult is what `model random --json` prints.
type modelRandomResult struct {
	Dir     string  `json:"dir"`
	Shape   string  `json:"shape"`
	Dtype   string  `json:"dtype"`
	Seed    uint64  `json:"seed"`
	Bytes   int64   `json:"model_bytes"`
	Seconds float64 `json:"seconds"`
}

func newModelRandomCmd() *cobra.Command {
	var (
		dtype  string
		seed   uint64
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "random h14|b32 DIR",
		Short: "Write a model folder of random weights in a real shape (a stand-in for measuring)",
		Long: `Writes config.json and model.safetensors of random weights in the exact
shape and Hugging Face layout of ViT-H/14 (h14: 3.9 GB in f32, like laion's
checkpoint) or ViT-B/32 (b32), the weights ` + "`bench model --random`" + ` builds in memory.
It is a stand-in for a real checkpoint when measuring loading, memory and
speed without a download:

    clipidx model random h14 /tmp/h14
    clipidx bench model --model /tmp/h14 --texts 0
    clipidx bench model --model /tmp/h14 --texts 0 --weights f16

No tokenizer or preprocessing files are written, and its embeddings mean
nothing. DIR must be new or empty. Each tensor is generated as it is
written, so memory stays near 0.3 GB whatever the model's size.

A run that fails (a full disk) or is stopped (Ctrl-C, SIGTERM: exit 130,
143) removes what it wrote, and DIR when it created it. What a killed run
leaves in DIR (a hidden .random-model.tmp-N folder or .model.safetensors.tmpN
file) does not count as DIR's content: the next run removes it and says so.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg clipnpu.Config
			switch args[0] {
			case "h14":
				cfg = clipnpu.ViTH14Config()
			case "b32":
				cfg = clipnpu.ViTB32Config()
			default:
				return usageError("model random: shape %q: want h14 or b32", args[0])
			}
			switch dtype {
			case "f32", "f16", "bf16":
			default:
				return usageError("--dtype %q: want f32, f16 or bf16", dtype)
			}
			dir := args[1]
			path := filepath.Join(dir, "model.safetensors")
			_, err := os.Stat(dir)
			existed := err == nil
			left, others, err := clipnpu.RandomLeftovers(dir)
			if err != nil {
				return err
			}
			if len(others) > 0 {
				return fmt.Errorf("%s is not empty (it holds %s): choose a new or empty folder, so no model is overwritten", dir, others[0])
			}
			var removed []string
			for _, name := range left {
				p := filepath.Join(dir, name)
				if err := os.RemoveAll(p); err != nil {
					return fmt.Errorf("remove %s, left by an interrupted model random: %w", p, err)
				}
				removed = append(removed, p)
			}
			noteLeftovers(cmd.ErrOrStderr(), removed, "model random")
			cfg.Name = fmt.Sprintf("random-%s-seed%d-%s", args[0], seed, dtype)
			ctx, stop := stopContext(cmd.Context())
			defer stop()
			t0 := time.Now()
			if err := clipnpu.WriteRandomContext(ctx, dir, cfg, seed, dtype, g.threads); err != nil {
				kept := "removed the files this run wrote"
				if !existed {
					kept = "removed " + dir + ", which this run created"
				}
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					return &exitError{code: interruptCode(ctx), err: fmt.Errorf("interrupted: %s; nothing of the model is left", kept)}
				}
				return fmt.Errorf("%w\nnothing of the model is left: %s", err, kept)
			}
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			res := modelRandomResult{Dir: dir, Shape: args[0], Dtype: dtype, Seed: seed, Bytes: st.Size(), Seconds: time.Since(t0).Seconds()}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: random %s weights (%s, seed %d), %.2f GB in %.1f s\n",
				dir, args[0], dtype, seed, float64(res.Bytes)/1e9, res.Seconds)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&dtype, "dtype", "f32", "storage of the weight matrices: f32, f16 or bf16")
	f.Uint64Var(&seed, "seed", 1, "seed of the random weights (the same as bench model --random --seed)")
	f.BoolVar(&asJSON, "json", false, "print a JSON object")
	return c
}
