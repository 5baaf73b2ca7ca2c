package plan

import (
	"math/bits"
	"slices"
	"strings"
)

// firstByName reorders s so that s[:k] holds the k elements whose names come
// first, in no particular order: what sorting s by name and taking s[:k]
// would give, but in linear time on average (quickselect). The plan needs
// only which elements they are, as its creates and deletes are sorted at the
// end. Names must be distinct.
func firstByName[T any](s []T, k int, name func(T) string) {
	// s[:lo] precede s[lo:hi], which precede s[hi:]; k stays within.
	lo, hi := 0, len(s)
	for rounds := 2 * bits.Len(uint(len(s))); lo < k && k < hi; rounds-- {
		if hi-lo <= 16 || rounds == 0 {
			// Small, or partitioning badly (names made to defeat the
			// pivot choice): sorting bounds the time at O(n log n).
			slices.SortFunc(s[lo:hi], func(a, b T) int { return strings.Compare(name(a), name(b)) })
			return
		}
		p := lo + partitionByName(s[lo:hi], name)
		switch {
		case p < k:
			lo = p + 1
		case p > k:
			hi = p
		default:
			return
		}
	}
}

// partitionByName moves the median of the first, middle and last names to
// its place in s, smaller names before it, larger after, and returns where.
func partitionByName[T any](s []T, name func(T) string) int {
	mid, last := len(s)/2, len(s)-1
	if name(s[mid]) < name(s[0]) {
		s[0], s[mid] = s[mid], s[0]
	}
	if name(s[last]) < name(s[0]) {
		s[0], s[last] = s[last], s[0]
	}
	if name(s[mid]) < name(s[last]) {
		s[mid], s[last] = s[last], s[mid]
	}
	pivot := name(s[last])
	i := 0
	for j := range last {
		if name(s[j]) < pivot {
			s[i], s[j] = s[j], s[i]
			i++
		}
	}
	s[i], s[last] = s[last], s[i]
	return i
}
