package supervisor

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// funcJob is a Job of two funcs.
type funcJob struct {
	run  func(context.Context) (any, error)
	done chan Outcome
}

func (j funcJob) Run(ctx context.Context) (any, error) { return j.run(ctx) }
func (j funcJob) Done(o Outcome)                       { j.done <- o }

// start runs fn under a new Handle counted in g; the outcome comes on the
// channel it returns.
func start(g *Gauge, fn func(context.Context) (any, error)) (*Handle, chan Outcome) {
	h, done := new(Handle), make(chan Outcome, 1)
	Go(context.Background(), g, h, funcJob{run: fn, done: done})
	return h, done
}

func TestGoRecoversPanicsWithTheStack(t *testing.T) {
	_, done := start(nil, func(context.Context) (any, error) { panic("boom") })
	o := <-done
	var pe *PanicError
	require.True(t, errors.As(o.Err, &pe))
	assert.Equal(t, "boom", pe.Value)
	assert.Contains(t, string(pe.Stack), "supervisor_test.go")
	assert.Equal(t, "input handler panicked: boom", pe.Error())
}

func TestAbandonCountsUntilTheHandlerReturns(t *testing.T) {
	var g Gauge
	release := make(chan struct{})
	h, done := start(&g, func(context.Context) (any, error) { <-release; return "late", nil })
	assert.True(t, h.Abandon())
	assert.False(t, h.Abandon(), "counted once")
	assert.EqualValues(t, 1, g.Load())
	close(release)
	assert.Equal(t, "late", (<-done).Result)
	assert.EqualValues(t, 0, g.Load())
}

func TestAbandonAfterReturnIsNotCounted(t *testing.T) {
	var g Gauge
	h, done := start(&g, func(context.Context) (any, error) { return 1, nil })
	<-done
	assert.False(t, h.Abandon())
	assert.EqualValues(t, 0, g.Load())
}

func TestCap(t *testing.T) {
	c := Cap{Max: 2}
	assert.True(t, c.Acquire())
	assert.True(t, c.Acquire())
	assert.False(t, c.Acquire())
	c.Release()
	assert.True(t, c.Acquire())
	c.Release()
	c.Release()
	c.Release() // never below zero
	assert.Equal(t, 0, c.Running)
}

func TestGateClosedWhileIdleRunsNothingMore(t *testing.T) {
	var g Gauge
	gate := NewGate(&g)
	require.True(t, gate.Enter())
	require.True(t, gate.Leave())
	assert.False(t, gate.Close(), "no callback running")
	assert.False(t, gate.Enter(), "nothing runs after Close")
	assert.EqualValues(t, 0, g.Load())
}

func TestGateClosedDuringACallbackAbandonsItUntilItLeaves(t *testing.T) {
	var g Gauge
	gate := NewGate(&g)
	require.True(t, gate.Enter())
	assert.True(t, gate.Close())
	assert.False(t, gate.Close(), "counted once")
	assert.EqualValues(t, 1, g.Load())
	assert.False(t, gate.Leave(), "the goroutine must stop")
	assert.EqualValues(t, 0, g.Load())
	assert.False(t, gate.Enter())
}
