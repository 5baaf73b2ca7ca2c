// Package controller is the glue of the DaemonSet controller: informers,
// workqueues, expectations and the writers that apply the decisions of the
// pure planner in controller/plan to the API server.
package controller
