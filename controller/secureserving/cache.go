package secureserving

import (
	"sync"
	"time"
)

// ttlCache remembers answers of the API server for a while. It holds at
// most max entries, so that a flood of distinct bad tokens costs bounded
// memory: when full, expired entries go first, then the one that would
// expire soonest. Callers pass now, so that tests need no sleeps.
type ttlCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]cacheEntry[V]
}

type cacheEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](max int) *ttlCache[V] {
	return &ttlCache[V]{max: max, entries: map[string]cacheEntry[V]{}}
}

// get returns the value stored under key if it has not expired at now.
func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// add stores v under key until now+ttl.
func (c *ttlCache[V]) add(key string, v V, ttl time.Duration, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[key] = cacheEntry[V]{value: v, expires: now.Add(ttl)}
}

// evict makes room for one entry; c.mu is held.
func (c *ttlCache[V]) evict(now time.Time) {
	var soonest string
	var soonestAt time.Time
	found := false
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
			continue
		}
		// Ties go to the smaller key, so that eviction does not depend on map order.
		if !found || e.expires.Before(soonestAt) || (e.expires.Equal(soonestAt) && k < soonest) {
			soonest, soonestAt, found = k, e.expires, true
		}
	}
	if len(c.entries) >= c.max {
		delete(c.entries, soonest)
	}
}

// len is the number of entries held, expired ones included.
func (c *ttlCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
