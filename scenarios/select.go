package scenarios

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// Select picks n of the candidate node (or pod) names for the step with the
// given index, deterministically: the same seed, step index and candidate
// set give the same names in the same order, whatever the order of
// candidates. Each name gets a score from a hash of (seed, stepIndex, name)
// and the n lowest scores win, so a candidate's chance does not depend on
// the others and the result does not change between Go versions. Duplicate
// names count once; n is capped at the number of candidates.
func Select(seed int64, stepIndex int, candidates []string, n int) []string {
	type scored struct {
		name  string
		score uint64
	}
	list := make([]scored, 0, len(candidates))
	seen := make(map[string]bool, len(candidates))
	base := mix64(uint64(seed)) ^ mix64(uint64(stepIndex)+0x9e3779b97f4a7c15)
	for _, c := range candidates {
		if seen[c] {
			continue
		}
		seen[c] = true
		h := fnv.New64a()
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], base)
		h.Write(buf[:])
		h.Write([]byte(c))
		list = append(list, scored{c, mix64(h.Sum64())})
	}
	slices.SortFunc(list, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.name, b.name))
	})
	n = max(0, min(n, len(list)))
	out := make([]string, n)
	for i := range out {
		out[i] = list[i].name
	}
	return out
}

// mix64 is the splitmix64 finalizer: it spreads every input bit over the
// output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
