package actors

import (
	"testing"
	"unsafe"
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
