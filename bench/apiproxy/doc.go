// Package apiproxy is a reverse proxy in front of the API server that delays
// requests by method, by a latency a fault step switches on and off while
// it runs: the controller under test talks through it, the harness does not.
package apiproxy
