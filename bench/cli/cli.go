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
	return &commandLineError{cmd: cmd, err: err}
}

// commandLineError is ErrUsage without the word in the message.
type commandLineError struct {
	cmd string
	err error
}

func (e *commandLineError) Error() string {
	msg := e.err.Error()
	if strings.Contains(msg, "\n") {
		// One problem a line, under the command.
		return e.cmd + ":\n  " + strings.ReplaceAll(msg, "\n", "\n  ")
	}
	return e.cmd + ": " + msg
}

func (e *commandLineError) Unwrap() []error { return []error{e.err, ErrUsage} }

// Env is what a command needs from its process.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Self is the dsbench binary, which --floor-watch starts again to hold
	// the floor's informers; "" where there is none (a test binary).
	Self string
}

// DefaultEnv uses the real process. Self is /proc/self/exe, so that a
// rebuild during a long suite does not change the binary it starts.
func DefaultEnv() Env {
	self := "/proc/self/exe"
	if _, err := os.Stat(self); err != nil {
		self, _ = os.Executable()
	}
	return Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Self: self}
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
		{"report", "re-render the reports from a report.json; `report scale` composes a scaling report of several", runReport},
		{"scale", "play scenarios at several node counts, then fit and plot cost against nodes", runScale},
		{"compare", "compare two saved runs", runCompare},
		{"floor-informers", "hold the informers our controller holds and nothing else (started by --floor-watch)", runFloorInformers},
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

// newFlagSet returns a flag set that reports errors instead of exiting;
// --help shows `dsbench NAME` with the arguments it takes, then the flags.
func newFlagSet(name, arguments string, env Env) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.SortFlags = true
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, strings.TrimSpace("Usage: dsbench "+name+" "+arguments))
		for _, c := range commands() {
			if c.name == strings.Fields(name)[0] {
				fmt.Fprintf(w, "\n%s.\n", upperFirst(c.summary))
			}
		}
		if fs.HasFlags() {
			fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
		}
	}
	return fs
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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

// subcommand splits off the subcommand; `CMD --help` lists them.
func subcommand(env Env, cmd string, args []string, subs ...string) (string, []string, error) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintf(env.Stderr, "Usage: dsbench %s %s [flags]\n\nRun `dsbench %s SUBCOMMAND --help` for a subcommand's flags.\n", cmd, strings.Join(subs, "|"), cmd)
		return "", nil, pflag.ErrHelp
	}
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
