package actors

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// runtimeMem and the 8-byte header the allocator gives an object over 512
// bytes with pointers fit the 1 152-byte size class (decisions 60 and 75;
// 1 408 before the tracker and the counters left it): four words more in
// Runtime, shared, lifecycle, connection or writer move every connection
// to the 1 280 class. A merge that did (1 416 bytes, the 1 536 class) is
// what this catches.
func TestRuntimeMemFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(runtimeMem{})+8, uintptr(1152))
}
