package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// runtimeMem and the 8-byte header the allocator gives an object over 512
// bytes with pointers fit the 1 024-byte size class (decisions 60, 75 and
// 80; 1 408 before the tracker and the counters left it, 1 152 before
// shared stopped copying the Config's handlers, guards, logger, hook and
// tracer): one word more in Runtime, shared, lifecycle, connection or
// writer moves every connection to the 1 152 class, which is what this
// catches.
func TestRuntimeMemFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(runtimeMem{})+8, uintptr(1024))
}
