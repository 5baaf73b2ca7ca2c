package kwok

import (
	"fmt"
	"os"
	"strings"
)

// ComponentKwokController is the kwok controller's name in kwokctl's pid
// files, logs and record of the cluster.
const ComponentKwokController = "kwok-controller"

// PprofTarget is a component of the cluster that serves Go's pprof
// profiles: etcd (--enable-pprof) and the kwok controller (its debugging
// handlers), both turned on by kwokctlConfig and bound to loopback.
// kube-apiserver serves them too, behind the API (GET /debug/pprof/...).
type PprofTarget struct {
	// Component is kwokctl's name for it.
	Component string
	// BaseURL is its /debug/pprof, without the trailing slash.
	BaseURL string
}

// PprofTargets are the cluster's etcd and kwok controller as pprof
// targets, found in kwokctl's record of the cluster.
func (c *Cluster) PprofTargets() ([]PprofTarget, error) {
	data, err := os.ReadFile(c.recordPath())
	if err != nil {
		return nil, fmt.Errorf("reading kwokctl's record of cluster %q: %w", c.conf.Name, err)
	}
	etcd, err := etcdURLFromRecord(data)
	if err != nil {
		return nil, fmt.Errorf("finding the etcd of cluster %q: %w", c.conf.Name, err)
	}
	kwokURL, err := kwokServerURLFromRecord(data)
	if err != nil {
		return nil, fmt.Errorf("finding the kwok controller of cluster %q: %w", c.conf.Name, err)
	}
	return []PprofTarget{
		{Component: "etcd", BaseURL: etcd + "/debug/pprof"},
		{Component: ComponentKwokController, BaseURL: kwokURL + "/debug/pprof"},
	}, nil
}

// kwokServerURLFromRecord finds the base URL of the kwok controller's
// server in kwokctl's record: its --server-address, in plain HTTP, which
// that server serves beside HTTPS on the same port. A wildcard host is
// replaced by 127.0.0.1.
func kwokServerURLFromRecord(data []byte) (string, error) {
	conf, err := kwokctlRecord(data)
	if err != nil {
		return "", err
	}
	for _, comp := range conf.Components {
		if comp.Name != ComponentKwokController {
			continue
		}
		addr := ""
		for _, arg := range comp.Args {
			if v, ok := strings.CutPrefix(arg, "--server-address="); ok {
				addr = v
			}
		}
		if addr == "" {
			return "", fmt.Errorf("component %s has no --server-address argument", ComponentKwokController)
		}
		hostPort, ok := dialable(addr)
		if !ok {
			return "", fmt.Errorf("%s --server-address %q: want host:port", ComponentKwokController, addr)
		}
		return "http://" + hostPort, nil
	}
	return "", fmt.Errorf("no component %s", ComponentKwokController)
}
