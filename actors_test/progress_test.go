package actors_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit"
)

// progressNotes is notes that also takes progress decoded.
type progressNotes struct{ notes }

func (n *progressNotes) HandleProgress(_ context.Context, nc conduit.NotificationContext, p *conduit.Progress) {
	total := "none"
	if p.Total != nil {
		total = fmt.Sprint(*p.Total)
	}
	n.add(fmt.Sprintf("progress %s %#v %v/%s %q", nc.ServerID, p.Token, p.Progress, total, p.Message))
}

// TestProgressReachesItsTypedHook: with a Progress hook, notifications/progress
// arrive decoded there (token as a string or an int64, progress, total,
// the message sanitised), in order with the rest, and no longer reach the
// Notification hook; a malformed one is dropped and counted in Malformed.
func TestProgressReachesItsTypedHook(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		n := &progressNotes{}
		c, srv := e.connect(t, conduit.Options{ServerID: "s1", Handler: n})
		srv.notify("notifications/progress", map[string]any{"progressToken": "conduit-call", "progress": 1, "total": 4, "message": "step \x1b[31mone"})
		srv.notify("notifications/acme/updated", map[string]any{"uri": "a"})
		srv.notify("notifications/progress", map[string]any{"progressToken": 7, "progress": 2.5})
		srv.notify("notifications/progress", map[string]any{"progressToken": "t", "progress": "half"}) // malformed
		srv.notify("notifications/progress", map[string]any{"progress": 1})                            // no token
		srv.notify("notifications/progress", map[string]any{"progressToken": true, "progress": 1})     // bad token
		srv.notify("notifications/message", map[string]any{"level": "info", "data": "x"})
		synctest.Wait()
		assert.Equal(t, []string{
			`progress s1 "conduit-call" 1/4 "step one"`,
			`notifications/acme/updated {"uri":"a"}`,
			`progress s1 7 2.5/none ""`,
			"log info  x",
		}, n.list())
		assert.EqualValues(t, 3, c.Stats().Malformed)
	})
}

// TestProgressWithoutItsHookStillReachesNotification: the raw hook keeps
// progress when no Progress hook is set.
func TestProgressWithoutItsHookStillReachesNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &notes{}
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{Notification: n.HandleNotification}}, "2025-11-25")
		srv.notify("notifications/progress", map[string]any{"progressToken": "x", "progress": "half"})
		synctest.Wait()
		assert.Equal(t, []string{`notifications/progress {"progress":"half","progressToken":"x"}`}, n.list())
		assert.EqualValues(t, 0, c.Stats().Malformed)
	})
}

// TestProgressHookAloneListens: a client with only a Progress hook gets
// progress and nothing else is queued for it.
func TestProgressHookAloneListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &progressNotes{}
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{Progress: n.HandleProgress}}, "2025-11-25")
		srv.notify("notifications/acme/updated", map[string]any{"uri": "a"})
		srv.notify("notifications/progress", map[string]any{"progressToken": "x", "progress": 3, "total": 3})
		synctest.Wait()
		assert.Equal(t, []string{`progress  "x" 3/3 ""`}, n.list())
		assert.EqualValues(t, 0, c.Stats().NotificationsDropped)
	})
}
