package scenarios

import "maps"

// poolSizes is the node count of each pool as the steps go: the one walk
// that Validate and Scale share, so that both see the same sizes.
type poolSizes map[string]int

func (p poolSizes) total() int {
	n := 0
	for _, c := range p {
		n += c
	}
	return n
}

// afterNodes applies a join or leave of pool nodes; a leave never takes a
// pool below zero (Validate reports one that would).
func (p poolSizes) afterNodes(n *NodesStep) {
	if n == nil || n.Pool == "" {
		return
	}
	switch n.Action {
	case NodeJoin:
		p[n.Pool] += n.Resolve(p[n.Pool])
	case NodeLeave:
		p[n.Pool] = max(0, p[n.Pool]-n.Resolve(p[n.Pool]))
	}
}

// afterParallel sets p, the sizes before a parallel group, to the sizes
// after it: every branch starts from p, and their changes add up.
func (p poolSizes) afterParallel(ends []poolSizes) {
	base := maps.Clone(p)
	for _, end := range ends {
		for pool, n := range end {
			p[pool] += n - base[pool]
		}
	}
	for pool, n := range p {
		p[pool] = max(0, n)
	}
}
