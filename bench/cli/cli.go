package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// ErrUsage marks errors in the command line; main exits 2 for them.
var ErrUsage = errors.New("usage")

// usageError wraps a flag or argument problem so that it names the command.
func usageError(cmd string, err error) error {
	return fmt.Errorf("%s: %w: %w", cmd, err, ErrUsage)
}

// Env is what a command needs from its process.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// DefaultEnv uses the real process.
func DefaultEnv() Env {
	return Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

func commands() []command {
	return []command{
		{"cluster", "bring a KWOK cluster up or down, or show its status", runCluster},
		{"nodes", "create, delete or patch fake nodes in bulk", runNodes},
		{"validate", "check scenario files without a cluster", runValidate},
		{"library", "list the built-in scenarios", runLibrary},
		{"run", "play scenarios against a controller and write reports", runRun},
		{"bench", "the default suite, ours against upstream, with the regression gate", runBench},
		{"report", "re-render the reports from a report.json", runReport},
		{"compare", "compare two saved runs", runCompare},
		{"mutants", "play broken variants of our controller (a -tags mutants build) and show which invariant catches each", runMutants},
	}
}

// Main runs the command named by args[0].
func Main(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(env.Stdout)
		if len(args) == 0 {
			return usageError("dsbench", errors.New("no command given"))
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	return usageError("dsbench", fmt.Errorf("unknown command %q (try `dsbench help`)", args[0]))
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "dsbench: scale tests for DaemonSet controllers on KWOK clusters.")
	fmt.Fprintln(w, "\nCommands:")
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `dsbench COMMAND --help` for a command's flags.")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, env Env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.SortFlags = true
	return fs
}

// parse parses flags and wraps errors as usage errors that name the command.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError(fs.Name(), err)
	}
	return nil
}

func subcommand(cmd string, args []string, subs ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usageError(cmd, fmt.Errorf("want a subcommand: %s", strings.Join(subs, ", ")))
	}
	for _, s := range subs {
		if args[0] == s {
			return s, args[1:], nil
		}
	}
	return "", nil, usageError(cmd, fmt.Errorf("unknown subcommand %q: want one of %s", args[0], strings.Join(subs, ", ")))
}
