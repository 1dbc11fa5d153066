package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit/messages"
)

// A request child is one allocation per server request, live for as long
// as its handler runs: a burst of a thousand holds a thousand. Above 512
// bytes an object with pointers carries an 8-byte malloc header, so the
// struct must stay at or under 888 bytes to take the 896-byte size class
// rather than the 1 024-byte one (decision 59).
func TestRequestChildFitsItsSizeClass(t *testing.T) {
	const sizeClass, mallocHeader = 896, 8
	if got := unsafe.Sizeof(request{}); got+mallocHeader > sizeClass {
		t.Fatalf("request is %d bytes: with its malloc header it no longer fits the %d-byte size class", got, sizeClass)
	}
}

// The connection keeps one map of running children, by request id: a
// reply or a failure counts only from the child that holds its id now (an
// earlier child of a reused id, released at its crash, is ignored).
func TestAChildsReplyCountsOnlyFromTheChildHoldingItsID(t *testing.T) {
	id := messages.IntID(5)
	old, now := &request{}, &request{}
	old.in.guard.Context.RequestID, now.in.guard.Context.RequestID = id, id
	c := &connection{running: map[messages.ID]*request{id: now}}
	c.childDone(old, []byte(`{"jsonrpc":"2.0","id":5,"result":{}}`))
	assert.Same(t, now, c.running[id], "a stale child's reply released the running one")
	c.childFailed(old, "boom")
	assert.Same(t, now, c.running[id], "a stale child's failure released the running one")
}
