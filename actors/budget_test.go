package actors

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// The reader waits while the bound would be passed, and goes on when
// enough is released; a message larger than the bound goes alone; close
// ends a wait.
func TestInboundBudgetWaitsPastItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newInboundBudget(10)
		assert.True(t, b.acquire(6))
		assert.True(t, b.acquire(4), "up to the bound")
		got := make(chan bool)
		go func() { got <- b.acquire(3) }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("acquired past the bound")
		default:
		}
		b.release(2)
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("acquired past the bound after a release too small")
		default:
		}
		b.release(4)
		assert.True(t, <-got, "released enough")
		assert.EqualValues(t, 7, b.held.Load())

		go func() { got <- b.acquire(50) }()
		synctest.Wait()
		b.release(7)
		assert.True(t, <-got, "larger than the bound, once nothing else is held")

		go func() { got <- b.acquire(1) }()
		synctest.Wait()
		b.close()
		assert.False(t, <-got, "closed")
	})
}
