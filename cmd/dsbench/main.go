// Command dsbench runs scale tests of DaemonSet controllers on KWOK clusters:
// it brings clusters up and down, plays scenario files against a controller,
// checks the result with its own oracle and writes statistical reports.
//
// Run `dsbench help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/dsbench/dsbench/bench/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Main(ctx, cli.DefaultEnv(), os.Args[1:])
	stop()
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, cli.ErrUsage):
		fmt.Fprintln(os.Stderr, "dsbench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "dsbench:", err)
		os.Exit(1)
	}
}
