package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsbench/dsbench/controller/plan"
)

// podMemo keeps, per pod object, what a DaemonSet's syncs read of it:
// whether its labels match the selector, and its plan.PodFacts. An informer
// replaces a pod's object when the pod changes and never modifies one, so
// an entry holds as long as its object. At 5000 nodes the passes that read
// every pod's labels and conditions again at each sync (planning and
// claiming) were over half of the controller's CPU, much of it in cache
// misses: the entries are a few hundred kilobytes, the pods tens of
// megabytes.
//
// The syncs of one DaemonSet never run at once (the work queue hands a key
// to one worker at a time), so a memo needs no lock.
type podMemo struct {
	uid      types.UID
	selector string // the selector the entries' matches were computed for
	entries  map[*corev1.Pod]*podMemoEntry
	epoch    uint64 // the current sync's; an entry not used in it is stale
	used     int    // entries used in the current sync
	// labels interns the hash and generation label values: a few distinct
	// strings that every sync compares, kept together instead of in each
	// pod's memory.
	labels map[string]string
}

type podMemoEntry struct {
	epoch   uint64
	matches bool
	facts   plan.PodFacts
}

// begin starts a sync of the DaemonSet uid whose selector is selector,
// dropping every entry if either changed.
func (m *podMemo) begin(uid types.UID, selector string) {
	if m.entries == nil || m.uid != uid || m.selector != selector {
		m.uid, m.selector = uid, selector
		m.entries = map[*corev1.Pod]*podMemoEntry{}
		m.labels = map[string]string{}
	}
	m.epoch++
	m.used = 0
}

// entry returns pod's entry, reading pod (with matches for the selector)
// the first time it is seen.
func (m *podMemo) entry(pod *corev1.Pod, matches func(*corev1.Pod) bool) *podMemoEntry {
	e := m.entries[pod]
	if e == nil {
		e = &podMemoEntry{matches: matches(pod), facts: plan.ReadPodFacts(pod)}
		e.facts.Hash = m.intern(e.facts.Hash)
		e.facts.Generation = m.intern(e.facts.Generation)
		m.entries[pod] = e
	}
	if e.epoch != m.epoch {
		e.epoch = m.epoch
		m.used++
	}
	return e
}

func (m *podMemo) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := m.labels[s]; ok {
		return v
	}
	if len(m.labels) >= maxInternedLabels {
		return s // a DaemonSet with this many templates in use gains nothing
	}
	m.labels[s] = s
	return s
}

// maxInternedLabels bounds labels: pods may carry any value.
const maxInternedLabels = 64

// end drops the entries the sync did not use once they are more than a
// quarter of those it did, so that the memo holds the objects of pods that
// changed or went only for a while.
func (m *podMemo) end() {
	if len(m.entries) <= m.used+m.used/4+64 {
		return
	}
	for pod, e := range m.entries {
		if e.epoch != m.epoch {
			delete(m.entries, pod)
		}
	}
	if len(m.labels) >= maxInternedLabels {
		clear(m.labels)
	}
}

// podMemoFor returns key's memo, creating it.
func (c *Controller) podMemoFor(key string) *podMemo {
	c.podMemosMu.Lock()
	defer c.podMemosMu.Unlock()
	m := c.podMemos[key]
	if m == nil {
		m = &podMemo{}
		c.podMemos[key] = m
	}
	return m
}

// forgetPodMemo drops key's memo, when its DaemonSet is gone.
func (c *Controller) forgetPodMemo(key string) {
	c.podMemosMu.Lock()
	defer c.podMemosMu.Unlock()
	delete(c.podMemos, key)
}
