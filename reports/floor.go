package reports

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FloorTrial is a run of the floor at a pacing its search did not keep.
type FloorTrial struct {
	Case       Case
	Repetition int
	InFlight   string // the pacing tried, as in --floor-inflight
	Kept       string // the pacing the search kept
}

// floorInFlight is the --floor-inflight a floor run used; "" if it records none.
func floorInFlight(run *Run) string {
	for _, a := range run.ControllerArgs {
		if v, ok := strings.CutPrefix(a, "--floor-inflight="); ok {
			return v
		}
	}
	return ""
}

// FloorTrials returns the floor's runs at a pacing its search did not keep,
// by case then repetition, and the cases whose search did not finish. The
// harness tries each candidate pacing on one repetition and then runs the
// fastest (bench's floorPacer), so per case the pacing with the most runs is
// the one kept and a run at any other is a trial that lost. Left in, such a
// run could only make the floor look slower and ours/floor smaller. When no
// pacing has more runs than every other (each candidate tried once, or a
// tie), no run is a trial and the case is unfinished.
func FloorTrials(r *Report) (trials []FloorTrial, unfinished []Case) {
	byCase := map[Case][]*Run{}
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Controller == ControllerFloor {
			cs := Case{run.Scenario, run.Nodes}
			byCase[cs] = append(byCase[cs], run)
		}
	}
	for _, cs := range slices.SortedFunc(maps.Keys(byCase), func(a, b Case) int {
		return strings.Compare(a.String(), b.String())
	}) {
		runs := byCase[cs]
		count := map[string]int{}
		for _, run := range runs {
			count[floorInFlight(run)]++
		}
		if len(count) == 1 {
			continue
		}
		kept, most, tie := "", 0, false
		for p, n := range count {
			switch {
			case n > most:
				kept, most, tie = p, n, false
			case n == most:
				tie = true
			}
		}
		if tie {
			unfinished = append(unfinished, cs)
			continue
		}
		var these []FloorTrial
		for _, run := range runs {
			if p := floorInFlight(run); p != kept {
				these = append(these, FloorTrial{Case: cs, Repetition: run.Repetition, InFlight: p, Kept: kept})
			}
		}
		slices.SortFunc(these, func(a, b FloorTrial) int { return a.Repetition - b.Repetition })
		trials = append(trials, these...)
	}
	return trials, unfinished
}

// isFloorTrial says whether run is one of trials.
func isFloorTrial(trials []FloorTrial, run *Run) bool {
	return run.Controller == ControllerFloor && slices.ContainsFunc(trials, func(t FloorTrial) bool {
		return t.Case == Case{run.Scenario, run.Nodes} && t.Repetition == run.Repetition
	})
}

// withoutFloorTrials is r without its floor trials: a shallow copy whose
// runs are r's others.
func withoutFloorTrials(r *Report, trials []FloorTrial) *Report {
	if len(trials) == 0 {
		return r
	}
	out := *r
	out.Runs = nil
	for i := range r.Runs {
		if !isFloorTrial(trials, &r.Runs[i]) {
			out.Runs = append(out.Runs, r.Runs[i])
		}
	}
	return &out
}

// FloorTrialsNote says which of the floor's runs leftOutOf (the comparison's
// rows, the curve's points) leaves out, and where the floor's search did not
// finish.
func FloorTrialsNote(trials []FloorTrial, unfinished []Case, leftOutOf string) string {
	var notes []string
	if len(trials) > 0 {
		parts := make([]string, len(trials))
		for i, t := range trials {
			parts[i] = fmt.Sprintf("%s repetition %d at %s calls in flight (kept %s)", t.Case, t.Repetition, t.InFlight, t.Kept)
		}
		notes = append(notes, "Left out of "+leftOutOf+": the floor's trials of a pacing its search did not keep ("+strings.Join(parts, "; ")+
			"): a pacing that lost would make the floor look slower, and every ratio to it smaller, than they are.")
	}
	if len(unfinished) > 0 {
		parts := make([]string, len(unfinished))
		for i, cs := range unfinished {
			parts[i] = cs.String()
		}
		notes = append(notes, "The floor's pacing search did not finish in "+strings.Join(parts, ", ")+
			" (no pacing ran more often than the others: fewer repetitions than --floor-inflight values): its runs there mix pacings, and a slow one makes the floor look slower than it is.")
	}
	return strings.Join(notes, " ")
}
