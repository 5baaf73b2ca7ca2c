package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/dsbench/dsbench/controller/connpool"
)

// withSharedRateLimiter returns a copy of cfg with one client-side rate
// limiter, so that every clientset made from it (the main one and the pod
// writes') draws on the same QPS and burst, as one clientset would.
func withSharedRateLimiter(cfg *rest.Config) *rest.Config {
	shared := rest.CopyConfig(cfg)
	if shared.RateLimiter == nil && shared.QPS > 0 {
		shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shared.QPS, shared.Burst)
	}
	return shared
}

// newPodWriteClient returns a clientset whose requests go over a pool of
// transports of their own (as many as connections), with at most streams
// requests in flight on each, the excess waiting for a stream instead of
// dialling a connection each (controller/connpool). cfg should share its rate limiter with the main
// client (withSharedRateLimiter).
func newPodWriteClient(cfg *rest.Config, connections, streams int) (kubernetes.Interface, error) {
	transports := make([]http.RoundTripper, connections)
	for i := range transports {
		c := rest.CopyConfig(cfg)
		// client-go caches transports by their TLS settings and dialler:
		// a dialler each gives each its own transport, so its own
		// connection.
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		rt, err := rest.TransportFor(c)
		if err != nil {
			return nil, fmt.Errorf("pod-write transport %d: %w", i, err)
		}
		transports[i] = rt
	}
	pool, err := connpool.New(transports, streams, nil)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfigAndClient(rest.CopyConfig(cfg), &http.Client{Transport: pool, Timeout: cfg.Timeout})
	if err != nil {
		return nil, fmt.Errorf("creating the pod-write API client: %w", err)
	}
	return client, nil
}
