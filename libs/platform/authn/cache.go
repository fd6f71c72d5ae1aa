package authn

import (
	"container/list"
	"sync"
	"time"
)

// Cache remembers recent positive token checks: bounded in size (least recently used entries
// go first) and in age (TTL), keyed by TokenID so no token is held in memory longer than needed.
type Cache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	now     func() time.Time
	order   *list.List // front = most recently used; values are *cacheEntry
	entries map[string]*list.Element
}

type cacheEntry struct {
	id      string
	account Account
	expires time.Time
}

// NewCache returns a cache of at most max entries, each kept at most ttl.
func NewCache(ttl time.Duration, max int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{ttl: ttl, max: max, now: now, order: list.New(), entries: make(map[string]*list.Element)}
}

// Get returns the cached account for a token id, if still fresh.
func (c *Cache) Get(id string) (Account, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[id]
	if !ok {
		return Account{}, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return Account{}, false
	}
	c.order.MoveToFront(el)
	return e.account, true
}

// Put caches a positive answer.
func (c *Cache) Put(id string, a Account) {
	if c.max <= 0 || c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[id]; ok {
		c.removeLocked(el)
	}
	c.entries[id] = c.order.PushFront(&cacheEntry{id: id, account: a, expires: c.now().Add(c.ttl)})
	for c.order.Len() > c.max {
		c.removeLocked(c.order.Back())
	}
}

// Revoke drops a token id at once (a token.revoked event arrived).
func (c *Cache) Revoke(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[id]; ok {
		c.removeLocked(el)
	}
}

// Len is the number of entries (fresh or not yet evicted).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *Cache) removeLocked(el *list.Element) {
	c.order.Remove(el)
	delete(c.entries, el.Value.(*cacheEntry).id)
}
