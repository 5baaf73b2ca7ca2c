package controller

// Event reasons the glue emits on a DaemonSet. The planner's own reasons
// (SelectingAll, failed or succeeded daemon pods and the like) are in plan.
// Reasons and messages shared with upstream are upstream's, to the letter
// (TestEventTextsAsUpstream); HashCollision and InvalidSelector are ours,
// where upstream only logs.
const (
	// SuccessfulCreateReason: a daemon pod was created.
	SuccessfulCreateReason = "SuccessfulCreate"
	// FailedCreateReason: creating a daemon pod failed.
	FailedCreateReason = "FailedCreate"
	// SuccessfulDeleteReason: a daemon pod was deleted.
	SuccessfulDeleteReason = "SuccessfulDelete"
	// FailedDeleteReason: deleting a daemon pod failed.
	FailedDeleteReason = "FailedDelete"
	// HashCollisionReason: the current revision's name was taken by other
	// data, so status.collisionCount was bumped.
	HashCollisionReason = "HashCollision"
	// InvalidSelectorReason: the selector cannot be parsed.
	InvalidSelectorReason = "InvalidSelector"
)
