// Package crosscheck holds only tests: they run the controller's planner and
// the harness's oracle on the same inputs and require the same answers. The
// oracle's production code never imports the planner, so that it stays an
// independent second implementation; this package is where the two meet.
package crosscheck
