package conduit

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

// listCache keeps the list results a modern server marks cacheable
// (CacheableResult: ttlMs > 0), by method and cursor, until their ttlMs
// passes or a list change of theirs arrives (SEP-2549). Only the list
// methods are kept: server/discover is Ping's liveness check, and a
// request that carries inputResponses or requestState (tools/call,
// resources/read, prompts/get) is never cached.
type listCache struct {
	mu      sync.Mutex
	entries map[string]cached
	hits    atomic.Int64
	// gen counts the list changes: a result asked for before one is not
	// kept (it may predate the change).
	gen atomic.Int64
}

type cached struct {
	raw   json.RawMessage
	until time.Time
}

// cachedLists are the methods whose results are kept, and the list
// change that drops each.
var cachedLists = map[string]string{
	messages.MethodListTools:     messages.MethodToolsListChanged,
	messages.MethodListPrompts:   messages.MethodPromptsListChanged,
	messages.MethodListResources: messages.MethodResourcesListChanged,
	"resources/templates/list":   messages.MethodResourcesListChanged,
}

// cacheKey is the key of a call whose result may be kept: its method and
// params (the cursor).
func cacheKey(method string, params json.RawMessage) (string, bool) {
	if _, ok := cachedLists[method]; !ok {
		return "", false
	}
	return method + "\x00" + string(params), true
}

func (lc *listCache) get(key string) (json.RawMessage, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	e, ok := lc.entries[key]
	switch {
	case !ok:
		return nil, false
	case !time.Now().Before(e.until):
		delete(lc.entries, key)
		return nil, false
	}
	lc.hits.Add(1)
	return e.raw, true
}

// put keeps raw when it says ttlMs > 0 and no list change came since gen
// (lc.gen when the call began).
func (lc *listCache) put(key string, raw json.RawMessage, gen int64) {
	var r struct {
		TTLMs int64 `json:"ttlMs"`
	}
	if json.Unmarshal(raw, &r) != nil || r.TTLMs <= 0 {
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.gen.Load() != gen {
		return
	}
	if lc.entries == nil {
		lc.entries = map[string]cached{}
	}
	lc.entries[key] = cached{raw: raw, until: time.Now().Add(time.Duration(r.TTLMs) * time.Millisecond)}
}

// changed drops the results a list change of method makes stale.
func (lc *listCache) changed(method string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.gen.Add(1)
	for key := range lc.entries {
		list, _, _ := strings.Cut(key, "\x00")
		if cachedLists[list] == method {
			delete(lc.entries, key)
		}
	}
}
