package actors

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ownKey struct{}

// A handler's own ctx: the parent's values, none of its Done, its own
// cancellation; Done works whether asked for before or after the end.
func TestOwnCancel(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ownKey{}, "v"))
	defer cancelParent()
	for _, askFirst := range []bool{true, false} {
		o := &ownCancel{values: context.WithoutCancel(parent)}
		_, has := o.Deadline()
		assert.False(t, has)
		assert.Equal(t, "v", o.Value(ownKey{}))
		var done <-chan struct{}
		if askFirst {
			done = o.Done()
		}
		cancelParent()
		assert.NoError(t, o.Err(), "the parent's end is not its end")
		o.cancel()
		o.cancel()
		if !askFirst {
			done = o.Done()
		}
		<-done
		assert.ErrorIs(t, o.Err(), context.Canceled)
	}
}

// A ctx derived from a handler's ctx ends with it, through AfterFunc, with
// no goroutine waiting on it meanwhile; context.Cause and a stopped
// AfterFunc behave as with context.WithCancel.
func TestOwnCancelDerived(t *testing.T) {
	in := &input{}
	in.own.values = context.Background()
	in.hctx = handlerCtx{Context: &in.own, in: in}
	before := runtime.NumGoroutine()
	var derived []context.Context
	for range 50 {
		d, cancel := context.WithCancel(&in.hctx)
		t.Cleanup(cancel)
		derived = append(derived, d)
	}
	assert.Equal(t, before, runtime.NumGoroutine(), "no goroutine per derived ctx")
	stopped := make(chan struct{})
	stop := context.AfterFunc(&in.hctx, func() { close(stopped) })
	assert.True(t, stop(), "stopped before the end")
	assert.False(t, stop())
	ran := make(chan struct{})
	context.AfterFunc(&in.hctx, func() { close(ran) })
	in.own.cancel()
	<-ran
	for _, d := range derived {
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a derived ctx did not end")
		}
		assert.ErrorIs(t, context.Cause(d), context.Canceled)
	}
	assert.ErrorIs(t, context.Cause(&in.hctx), context.Canceled)
	select {
	case <-stopped:
		t.Fatal("a stopped AfterFunc ran")
	default:
	}
	late := make(chan struct{})
	require.False(t, context.AfterFunc(&in.hctx, func() { close(late) })())
	<-late
}
