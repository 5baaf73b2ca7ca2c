package oracle

import "github.com/dsbench/dsbench/scenarios"

// kindFamilies is the one table from the oracle's kinds to the scenario
// format's violation kinds, which expectations name and reports group by.
// TestKindFamilies keeps it complete both ways.
var kindFamilies = map[Kind]scenarios.ViolationKind{
	DuplicatePods:       scenarios.DuplicatePod,
	PodOnIneligibleNode: scenarios.UnexpectedPod,
	PodOnDeletedNode:    scenarios.UnexpectedPod,
	OrphanPod:           scenarios.UnexpectedPod,
	MissingPod:          scenarios.MissingPod,
	Overunavailable:     scenarios.MaxUnavailableExceeded,
	Oversurge:           scenarios.MaxSurgeExceeded,
	StaleCreate:         scenarios.StaleRevision,
	// Two pods on one node, one of them terminating.
	CreatedBesideTerminating: scenarios.DuplicatePod,
	StatusMismatch:           scenarios.StatusMismatch,
	UnrequestedDisruption:    scenarios.UnrequestedDisruption,
	RolloutStalled:           scenarios.RolloutStalled,
}

// Kinds lists every kind the oracle reports.
func Kinds() []Kind {
	return []Kind{DuplicatePods, PodOnIneligibleNode, PodOnDeletedNode, OrphanPod, MissingPod, Overunavailable,
		Oversurge, StaleCreate, CreatedBesideTerminating, StatusMismatch, UnrequestedDisruption, RolloutStalled}
}

// Family is the scenario format's name for the kind.
func (k Kind) Family() scenarios.ViolationKind {
	if f, ok := kindFamilies[k]; ok {
		return f
	}
	return scenarios.ViolationKind(k)
}
