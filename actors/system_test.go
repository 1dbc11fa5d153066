package actors

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProtoactorLogsGoToOurLoggerWithAWarnFloor(t *testing.T) {
	var buf bytes.Buffer
	sys := NewSystem(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	sys.Logger().Info("actor system chatter")
	sys.Logger().Warn("something worth seeing")
	out := buf.String()
	assert.NotContains(t, out, "chatter")
	assert.Contains(t, out, `msg="something worth seeing"`)
	assert.Contains(t, out, "component=protoactor")
}
