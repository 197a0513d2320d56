package webhdfs

import (
	"sync"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// maxNonces bounds the redirect tokens a datanode remembers. Tokens live a
// minute, so this is 1000 WebHDFS data requests a second per datanode
// before new ones are refused (retriable) rather than remembered badly.
const maxNonces = 1 << 16

// nonceCache remembers the nonces of redirect tokens used on this datanode
// until the tokens expire, so that each is used once. It is safe for
// concurrent use.
type nonceCache struct {
	mu    sync.Mutex
	max   int
	until map[string]time.Time
}

func newNonceCache(max int) *nonceCache {
	return &nonceCache{max: max, until: map[string]time.Time{}}
}

// use records nonce, kept until expiry: a nonce seen before is an
// errs.Permission error. When the cache is full it drops expired entries
// first; if none has expired, the nonce is refused as errs.Unavailable
// rather than forgetting one that could then be replayed.
func (c *nonceCache) use(nonce string, expiry, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.until[nonce]; ok && now.Before(exp) {
		return errs.New(errs.Permission, "", "", "redirect token already used")
	}
	if len(c.until) >= c.max {
		for k, exp := range c.until {
			if !now.Before(exp) {
				delete(c.until, k)
			}
		}
		if len(c.until) >= c.max {
			return errs.New(errs.Unavailable, "", "", "too many redirect tokens in use on this datanode; retry from the namenode")
		}
	}
	c.until[nonce] = expiry
	return nil
}
