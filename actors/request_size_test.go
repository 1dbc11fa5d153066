package actors

import (
	"testing"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
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
// reply names its id and counts only from the child that holds it now (an
// earlier child of a reused id, released at its crash, is ignored), and a
// crash finds its child's id by a scan.
func TestAChildsReplyCountsOnlyFromTheChildHoldingItsID(t *testing.T) {
	old, now := actor.NewPID("nonhost", "conn/$1"), actor.NewPID("nonhost", "conn/$2")
	id := messages.IntID(5)
	c := &connection{running: map[messages.ID]*actor.PID{id: now}}
	c.childDone(nil, old, id, []byte(`{"jsonrpc":"2.0","id":5,"result":{}}`))
	assert.Same(t, now, c.running[id], "a stale child's reply released the running one")
	got, ok := c.childID(actor.NewPID("nonhost", "conn/$2"))
	assert.True(t, ok)
	assert.Equal(t, id, got)
	_, ok = c.childID(old)
	assert.False(t, ok)
}
