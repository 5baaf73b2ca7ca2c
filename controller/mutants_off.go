//go:build !mutants

package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/dsbench/dsbench/controller/plan"
)

// The production build: every hook is the identity. The `mutants` build tag
// swaps in mutants_on.go, whose broken variants prove that the harness
// catches them; none of that code is in this binary.

// MutantsBuilt reports whether the binary carries the broken variants.
const MutantsBuilt = false

func computePlan(_ string, in plan.Input) plan.Plan { return plan.Compute(in) }

func createTemplate(_ string, ds *appsv1.DaemonSet, hash, _ string) (*appsv1.DaemonSet, string) {
	return ds, hash
}

func skipAdoption(*corev1.Pod) bool { return false }

func requeueAfterError(q workqueue.TypedRateLimitingInterface[string], key string) {
	q.AddRateLimited(key)
}

func skipStatusAfterPodError(error) bool { return false }

func mayHaveLanded(err error) bool { return writeMayHaveLanded(err) }
