package scenarios

import (
	"fmt"
	"maps"
	"math"
)

// Scale returns a copy of s resized to nodes nodes in total, for the
// runner's --nodes flag. Pool counts keep their proportions (largest
// remainder, every non-empty pool keeps at least one node) and step counts
// scale by the same factor (at least 1, never more than the nodes the pool
// has at that point). Fractions, rates, durations and timeouts are left
// alone: use fraction and timeoutPerNode for what should grow with the
// cluster. s is not changed.
func Scale(s *Scenario, nodes int) (*Scenario, error) {
	def := s.DefaultNodes()
	nonEmpty := 0
	for _, p := range s.Cluster.Pools {
		if p.Count > 0 {
			nonEmpty++
		}
	}
	switch {
	case def <= 0:
		return nil, fmt.Errorf("scaling scenario %s: its pools have no nodes", s.Metadata.Name)
	case nodes < nonEmpty:
		return nil, fmt.Errorf("scaling scenario %s to %d nodes: it needs at least %d (one per pool)", s.Metadata.Name, nodes, nonEmpty)
	case nodes > MaxNodes:
		return nil, fmt.Errorf("scaling scenario %s to %d nodes: at most %d are supported", s.Metadata.Name, nodes, MaxNodes)
	}
	out := s.DeepCopy()
	counts := scaleCounts(s.Cluster.Pools, def, nodes)
	for i := range out.Cluster.Pools {
		out.Cluster.Pools[i].Count = counts[i]
	}
	out.Cluster.Nodes = nodes
	factor := float64(nodes) / float64(def)
	sizes := map[string]int{}
	for _, p := range out.Cluster.Pools {
		sizes[p.Name] = p.Count
	}
	scaleSteps(out.Steps, factor, sizes, len(out.DaemonSets()))
	return out, nil
}

// scaleCounts shares nodes among the pools in proportion to their counts.
func scaleCounts(pools []NodePool, def, nodes int) []int {
	quota := make([]float64, len(pools))
	counts := make([]int, len(pools))
	sum := 0
	for i, p := range pools {
		if p.Count <= 0 {
			continue
		}
		quota[i] = float64(p.Count) * float64(nodes) / float64(def)
		counts[i] = max(1, int(math.Floor(quota[i])))
		sum += counts[i]
	}
	// Move single nodes until the total is right: add where the pool is
	// furthest below its quota, take where it is furthest above.
	for sum != nodes {
		best, bestGap := -1, 0.0
		for i, p := range pools {
			if p.Count <= 0 {
				continue
			}
			gap := quota[i] - float64(counts[i])
			if sum > nodes {
				gap = -gap
				if counts[i] <= 1 {
					continue
				}
			}
			if best < 0 || gap > bestGap {
				best, bestGap = i, gap
			}
		}
		if best < 0 {
			break
		}
		if sum < nodes {
			counts[best]++
			sum++
		} else {
			counts[best]--
			sum--
		}
	}
	return counts
}

// scaleSteps scales counts and clamps them to the pool sizes the steps
// before leave, as Validate computes them.
func scaleSteps(steps []Step, factor float64, sizes poolSizes, daemonSets int) {
	for i := range steps {
		st := &steps[i]
		if t := st.Target(); t != nil && t.Count > 0 {
			t.Count = max(1, int(math.Round(float64(t.Count)*factor)))
			size := sizes.total()
			if t.Pool != "" {
				size = sizes[t.Pool]
			}
			limit := size
			switch {
			case st.Nodes != nil && st.Nodes.Action == NodeJoin:
				limit = MaxNodes
			case st.Pods != nil && st.Pods.DaemonSet == "":
				limit = size * max(1, daemonSets)
			}
			if t.Count > limit && limit > 0 {
				t.Count = limit
			}
		}
		sizes.afterNodes(st.Nodes)
		if st.Parallel != nil {
			var ends []poolSizes
			for _, branch := range st.Parallel {
				b := maps.Clone(sizes)
				scaleSteps(branch, factor, b, daemonSets)
				ends = append(ends, b)
			}
			sizes.afterParallel(ends)
		}
	}
}
