package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dsbench/dsbench/kwok"
)

// clusterFlags are shared by every command that needs a cluster.
type clusterFlags struct {
	name        string
	workdir     string
	binDir      string
	kubeconfig  string
	port        int
	upstreamDS  bool
	parallelism int
	kwokLog     string
	kwokWatch   string
	timeout     time.Duration
	verbose     bool
}

func (f *clusterFlags) register(fs *pflag.FlagSet, env Env) {
	cache := env.Getenv("DSBENCH_CACHE")
	if cache == "" {
		cache = kwok.CacheDir()
	}
	fs.StringVar(&f.name, "name", "dsbench", "cluster name (a DNS label)")
	fs.StringVar(&f.workdir, "workdir", filepath.Join(cache, "kwok"), "folder for the clusters' files (env DSBENCH_CACHE sets its parent)")
	fs.StringVar(&f.binDir, "bin-dir", filepath.Join(cache, "bin"), "folder with the pinned control plane (built by make tools)")
	fs.IntVar(&f.port, "apiserver-port", 0, "kube-apiserver port (0: a free one)")
	fs.BoolVar(&f.upstreamDS, "upstream-daemonset-controller", false, "keep kube-controller-manager's own DaemonSet controller on, as a baseline")
	fs.IntVar(&f.parallelism, "kwok-parallelism", kwok.DefaultKwokParallelism, "kwok controller workers per stage kind")
	fs.StringVar(&f.kwokLog, "kwok-log-level", "", "kwok controller's log level: DEBUG, INFO, WARN or ERROR (\"\": kwok's INFO; DEBUG says why kwok skips a pod event)")
	fs.StringVar(&f.kwokWatch, "kwok-watch", string(kwok.DefaultKwokWatch), `kwok controller: "relist" (v0.8.0 as released: every watch starts again from resourceVersion 0 and replays every pod) or "resume" (v0.8.0 patched to resume its watches; kwok/tools/patches)`)
	fs.DurationVar(&f.timeout, "timeout", 3*time.Minute, "how long bringing the cluster up may take")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print kwokctl's output")
}

func (f *clusterFlags) config(env Env) kwok.ClusterConfig {
	conf := kwok.ClusterConfig{
		Name:                        f.name,
		Workdir:                     f.workdir,
		Binaries:                    kwok.Binaries{Dir: f.binDir},
		UpstreamDaemonSetController: f.upstreamDS,
		APIServerPort:               f.port,
		KwokParallelism:             f.parallelism,
		KwokLogLevel:                f.kwokLog,
		KwokWatch:                   kwok.KwokWatch(f.kwokWatch),
		Timeout:                     f.timeout,
	}
	if f.verbose {
		conf.Log = env.Stderr
	}
	return conf
}

func runCluster(ctx context.Context, env Env, args []string) error {
	sub, args, err := subcommand(env, "cluster", args, "up", "down", "status")
	if err != nil {
		return err
	}
	fs := newFlagSet("cluster "+sub, "[flags]", env)
	var f clusterFlags
	f.register(fs, env)
	var all bool
	if sub == "down" {
		fs.BoolVar(&all, "all", false, "bring down every cluster in --workdir")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	f.validate(&bad)
	if all && fs.Changed("name") {
		bad.conflict("all", "name", "--all brings down every cluster in --workdir")
	}
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if err := bad.err(fs.Name()); err != nil {
		return err
	}
	conf := f.config(env)
	switch sub {
	case "up":
		start := time.Now()
		c, err := kwok.Up(ctx, conf)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "cluster %q is up in %.1fs\n", c.Name(), time.Since(start).Seconds())
		fmt.Fprintln(env.Stdout, c.Kubeconfig())
		return nil
	case "down":
		names := []string{conf.Name}
		if all {
			names = kwok.ClusterNames(conf.Workdir)
		}
		// Teardown must finish even when the caller is being interrupted.
		downCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		var errs []error
		for _, name := range names {
			conf.Name = name
			c, err := kwok.Open(conf)
			if err == nil {
				err = c.Down(downCtx)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(env.Stderr, "cluster %q is down\n", c.Name())
		}
		return errors.Join(errs...)
	default:
		c, err := kwok.Open(conf)
		if err != nil {
			return err
		}
		printStatus(env, c.Status(ctx))
		return nil
	}
}

func printStatus(env Env, st kwok.Status) {
	w := env.Stdout
	if !st.Exists {
		fmt.Fprintf(w, "cluster %q: not created\n", st.Name)
		return
	}
	state := "down"
	if st.APIReady {
		state = "up"
	}
	fmt.Fprintf(w, "cluster %q: %s\n", st.Name, state)
	fmt.Fprintf(w, "  kubeconfig: %s\n", st.Kubeconfig)
	if st.APIReady {
		fmt.Fprintf(w, "  server:     %s, %d nodes\n", st.ServerVers, st.NodeCount)
	} else if st.APIError != "" {
		fmt.Fprintf(w, "  api:        %s\n", st.APIError)
	}
	var procs []string
	for _, p := range st.Processes {
		alive := "running"
		if !p.Alive {
			alive = "dead"
		}
		procs = append(procs, fmt.Sprintf("%s (%d, %s)", p.Component, p.PID, alive))
	}
	fmt.Fprintf(w, "  processes:  %s\n", strings.Join(procs, ", "))
}
