// Package apiproxy is a reverse proxy in front of the API server that the
// controller under test talks through (the harness does not). Fault steps
// switch its faults on and off while they run: a latency by method
// (slowAPI), and pod writes answered Timeout and applied later
// (writeTimeouts).
package apiproxy
