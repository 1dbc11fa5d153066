package guards

import (
	"encoding/json"
	"sync"
)

// Bounds of a Pipeline's form cache.
const (
	formCacheEntries = 64
	formCacheMaxSize = 4 << 10 // bytes of schema; larger ones are parsed every time
)

// formCache keeps the forms a server's schemas parsed to, by protocol
// version and schema bytes: a server asks with the same few schemas again
// and again, and parsing one was a tenth of the CPU of an MRTR round. A
// Form never changes after ParseForm and hands out copies only, so one
// value can serve concurrent requests. Failures are not kept. It is bounded
// (formCacheEntries schemas of at most formCacheMaxSize bytes), so a server
// sending ever new schemas costs a parse each, as without the cache, and
// no more memory than the bound.
type formCache struct {
	mu    sync.Mutex
	forms map[formKey]*Form
}

// formKey is a form's protocol version and schema bytes. A lookup with
// string(raw) in it does not copy raw.
type formKey struct{ version, schema string }

// parse returns ParseForm(version, raw), from the cache when it can.
func (c *formCache) parse(version string, raw json.RawMessage) (*Form, error) {
	if len(raw) > formCacheMaxSize {
		return ParseForm(version, raw)
	}
	c.mu.Lock()
	f, ok := c.forms[formKey{version, string(raw)}]
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := ParseForm(version, raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forms == nil || len(c.forms) >= formCacheEntries {
		c.forms = make(map[formKey]*Form, formCacheEntries) // full: start over
	}
	c.forms[formKey{version, string(raw)}] = f
	return f, nil
}
