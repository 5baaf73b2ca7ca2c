package secureserving

import (
	"testing"
	"time"
)

func TestTTLCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type add struct {
		key string
		ttl int // seconds
		at  int
	}
	tests := []struct {
		name string
		adds []add
		now  int
		want map[string]bool // key: whether get finds it at now
	}{
		{
			name: "an entry lives until its TTL, exclusive",
			adds: []add{{"a", 10, 0}, {"b", 10, 1}},
			now:  10,
			want: map[string]bool{"a": false, "b": true},
		},
		{
			name: "a full cache drops the expired first",
			adds: []add{{"a", 5, 0}, {"b", 100, 0}, {"c", 50, 0}, {"d", 10, 6}},
			now:  6,
			want: map[string]bool{"a": false, "b": true, "c": true, "d": true},
		},
		{
			name: "a full cache without expired entries drops the one expiring soonest",
			adds: []add{{"a", 30, 0}, {"b", 20, 0}, {"c", 40, 0}, {"d", 10, 1}},
			now:  1,
			want: map[string]bool{"a": true, "b": false, "c": true, "d": true},
		},
		{
			name: "ties go by key",
			adds: []add{{"b", 20, 0}, {"a", 20, 0}, {"c", 20, 0}, {"d", 20, 0}},
			now:  0,
			want: map[string]bool{"a": false, "b": true, "c": true, "d": true},
		},
		{
			name: "replacing a key in a full cache drops nothing",
			adds: []add{{"a", 20, 0}, {"b", 20, 0}, {"c", 20, 0}, {"b", 30, 1}},
			now:  1,
			want: map[string]bool{"a": true, "b": true, "c": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTTLCache[string](3)
			for _, a := range tt.adds {
				c.add(a.key, "value of "+a.key, time.Duration(a.ttl)*time.Second, at(a.at))
			}
			if c.len() > 3 {
				t.Errorf("%d entries, want at most 3", c.len())
			}
			for key, want := range tt.want {
				v, ok := c.get(key, at(tt.now))
				if ok != want || (ok && v != "value of "+key) {
					t.Errorf("get(%q) at %ds = %q, %v; want found %v", key, tt.now, v, ok, want)
				}
			}
		})
	}
}
