package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsbench/dsbench/bench"
)

// runFloorInformers is the process the floor starts with --floor-watch
// (bench.FloorInformersCommand).
func runFloorInformers(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(bench.FloorInformersCommand, "--kubeconfig FILE [flags]", env)
	var kubeconfig, health string
	fs.StringVar(&kubeconfig, "kubeconfig", "", "the cluster to watch")
	fs.StringVar(&health, "health-probe-bind-address", "127.0.0.1:0", "where /healthz answers 200 once every cache has synced")
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	if kubeconfig == "" {
		bad = append(bad, errors.New("--kubeconfig: want the cluster's kubeconfig"))
	}
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if err := bad.err(bench.FloorInformersCommand); err != nil {
		return err
	}
	return bench.RunFloorInformers(ctx, kubeconfig, health, env.Stderr)
}
