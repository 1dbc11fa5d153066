package demoserver_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its server: no serve or tool goroutine may be left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
