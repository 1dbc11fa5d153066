package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
)

// recorder is a MessageInvoker that records what it is handed; "panic"
// panics.
type recorder struct {
	got       []string
	escalated []any
}

func (r *recorder) InvokeSystemMessage(m any) { r.got = append(r.got, "sys:"+m.(string)) }
func (r *recorder) InvokeUserMessage(m any) {
	if m == "panic" {
		panic("boom")
	}
	r.got = append(r.got, "user:"+m.(string))
}
func (r *recorder) EscalateFailure(reason, m any) { r.escalated = append(r.escalated, reason, m) }

// manual is a Dispatcher that runs activations when told.
type manual struct{ pending []func() }

func (d *manual) Schedule(fn func()) { d.pending = append(d.pending, fn) }
func (d *manual) Throughput() int    { return 300 }
func (d *manual) run() {
	for len(d.pending) > 0 {
		fn := d.pending[0]
		d.pending = d.pending[1:]
		fn()
	}
}

// System messages go first; one activation is scheduled for many posts;
// a suspended queue holds user messages until resumed.
func TestMsgQueueOrderAndSuspension(t *testing.T) {
	r, d := &recorder{}, &manual{}
	q := newMsgQueue()
	q.RegisterHandlers(r, d)
	q.PostUserMessage("a")
	q.PostUserMessage("b")
	q.PostSystemMessage("s1")
	assert.Len(t, d.pending, 1, "one activation for three posts")
	assert.Equal(t, 2, q.UserMessageCount())
	d.run()
	assert.Equal(t, []string{"sys:s1", "user:a", "user:b"}, r.got)

	r.got = nil
	q.PostSystemMessage(&actor.SuspendMailbox{})
	q.PostUserMessage("c")
	d.run()
	assert.Empty(t, r.got, "suspended: the user message waits")
	assert.Equal(t, 1, q.UserMessageCount())
	q.PostSystemMessage(&actor.ResumeMailbox{})
	d.run()
	assert.Equal(t, []string{"user:c"}, r.got)
	assert.Zero(t, q.UserMessageCount())
}

// A panic is escalated with its message, and the next message is still
// handed over.
func TestMsgQueueEscalatesAPanic(t *testing.T) {
	r, d := &recorder{}, &manual{}
	q := newMsgQueue()
	q.RegisterHandlers(r, d)
	q.PostUserMessage("panic")
	q.PostUserMessage("after")
	d.run()
	assert.Equal(t, []any{"boom", "panic"}, r.escalated)
	assert.Equal(t, []string{"user:after"}, r.got)
}

// A drained queue keeps a small backing array and lets a flood's go.
func TestMsgQueueReleasesAFloodsArray(t *testing.T) {
	r, d := &recorder{}, &manual{}
	q := newMsgQueue().(*msgQueue)
	q.RegisterHandlers(r, d)
	q.PostUserMessage("x")
	d.run()
	assert.Equal(t, 1, cap(q.user), "small: kept")
	for range keptCap + 1 {
		q.PostUserMessage("x")
	}
	d.run()
	assert.Nil(t, q.user, "a flood's array is let go")
	assert.Len(t, r.got, keptCap+2)
}

// An urgent message (a child's reply or failure to its connection) is
// taken after the system messages and before the user messages posted
// ahead of it, in the order posted; a suspended queue holds it too, and
// a drained lane keeps its small array (no allocation a reply).
func TestMsgQueueTakesUrgentMessagesFirst(t *testing.T) {
	r, d := &recorder{}, &manual{}
	q := newMsgQueue().(*msgQueue)
	q.RegisterHandlers(r, d)
	q.PostUserMessage("frame1")
	q.PostUserMessage("frame2")
	q.PostUrgent("reply1")
	q.PostSystemMessage("s1")
	q.PostUrgent("reply2")
	assert.Len(t, d.pending, 1, "one activation for five posts")
	assert.Equal(t, 4, q.UserMessageCount())
	d.run()
	assert.Equal(t, []string{"sys:s1", "user:reply1", "user:reply2", "user:frame1", "user:frame2"}, r.got)
	assert.Equal(t, 0, len(q.urgent.q))
	assert.Equal(t, 2, cap(q.urgent.q), "drained, the lane keeps its array")

	r.got = nil
	q.PostSystemMessage(&actor.SuspendMailbox{})
	q.PostUrgent("reply3")
	d.run()
	assert.Empty(t, r.got, "suspended: the urgent message waits")
	assert.Equal(t, 1, q.UserMessageCount())
	q.PostSystemMessage(&actor.ResumeMailbox{})
	d.run()
	assert.Equal(t, []string{"user:reply3"}, r.got)
}
