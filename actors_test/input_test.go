package actors_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

func TestRootsWithheldByTheFilterAreCounted(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{
				{URI: "file:///srv/repo"}, {URI: "https://example.com/"}, {URI: "file://other/x"}, {URI: "repo"},
			}}, nil
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h})
		e.ask(t, c, srv, "roots/list", nil)()
		assert.EqualValues(t, 3, c.Stats().RootsWithheld)
		e.ask(t, c, srv, "roots/list", nil)()
		assert.EqualValues(t, 6, c.Stats().RootsWithheld)
	})
}

// slogRecorder is a slog.Handler that keeps every record's message and
// attributes.
type slogRecorder struct {
	mu   sync.Mutex
	logs []map[string]string
}

func (l *slogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *slogRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *slogRecorder) WithGroup(string) slog.Handler            { return l }
func (l *slogRecorder) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs = append(l.logs, m)
	return nil
}

// find returns the first record with message msg.
func (l *slogRecorder) find(msg string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.logs {
		if m["msg"] == msg {
			return m
		}
	}
	return nil
}

// The two eras answer the same input the same way: one pipeline, so the same
// audit record (outcome, code, message) and the same log for each failure.
func TestInputFailuresAreAuditedAndLoggedAlikeInBothEras(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		params  any
		roots   func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error)
		outcome string
		code    int
		message string
		log     string // the message of the log record expected, with its attrs
		attrs   []string
	}{
		{
			name: "panic", method: "roots/list",
			roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				panic("boom")
			},
			outcome: "refused", code: messages.CodeInternalError, message: "Internal error: input handler panicked",
			log: "input handler panicked", attrs: []string{"method", "panic", "stack"},
		},
		{
			name: "handler error", method: "roots/list",
			roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				return nil, errors.New("disk gone")
			},
			outcome: "refused", code: messages.CodeInternalError, message: "Internal error: input handler failed",
			log: "input handler failed", attrs: []string{"method", "err"},
		},
		{
			name: "timeout", method: "roots/list",
			roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				return nil, block(ctx)
			},
			outcome: "timeout", code: messages.CodeInternalError, message: "Internal error: input handler timed out after 1s",
		},
		{
			name: "guard refusal", method: "sampling/createMessage", params: map[string]any{"maxTokens": "many"},
			outcome: "refused", code: messages.CodeInvalidParams, message: "Invalid params: messages must be an array",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBothEras(t, func(t *testing.T, e eraCase) {
				audits := make(chan conduit.AuditRecord, 4)
				logs := &slogRecorder{}
				c, srv := e.connect(t, conduit.Options{
					Handler: &handler{roots: tc.roots}, HandlerTimeout: time.Second, Logger: slog.New(logs),
					Sampling: conduit.SamplingOptions{AllowIdle: true},
					Audit:    func(r conduit.AuditRecord) { audits <- r },
				})
				e.ask(t, c, srv, tc.method, tc.params)()
				r := <-audits
				assert.Equal(t, e.era, r.Era)
				assert.Equal(t, tc.method, r.Method)
				assert.Equal(t, tc.outcome, r.Outcome)
				require.NotNil(t, r.Code)
				assert.Equal(t, tc.code, *r.Code)
				assert.Equal(t, tc.message, r.Message)
				assert.Empty(t, audits, "audited once")
				if tc.log != "" {
					l := logs.find(tc.log)
					require.NotNil(t, l, "logged %q", tc.log)
					for _, a := range tc.attrs {
						assert.NotEmpty(t, l[a], "attribute %s", a)
					}
				}
			})
		})
	}
}

func TestInputHandlerIgnoringItsContextIsAbandonedInBothEras(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		release := make(chan struct{})
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			<-release // ignores ctx
			return &conduit.ListRootsResult{}, nil
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h, HandlerTimeout: time.Second})
		e.ask(t, c, srv, "roots/list", nil)()
		assert.EqualValues(t, 1, c.Stats().AbandonedHandlers)
		close(release)
		synctest.Wait()
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
	})
}

// Close cancels an input being answered the same way in both eras: the
// handler's ctx ends, the input is audited once as cancelled, without a
// code, and nothing is left running.
func TestCloseCancelsAnInputAlikeInBothEras(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		audits := make(chan conduit.AuditRecord, 4)
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, block(ctx)
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { audits <- r }})
		e.ask(t, c, srv, "roots/list", nil) // never settled: Close comes first
		synctest.Wait()
		require.Equal(t, 1, h.count())
		require.NoError(t, c.Close())
		r := <-audits
		assert.Equal(t, "cancelled", r.Outcome)
		assert.Nil(t, r.Code)
		assert.Empty(t, r.Message)
		synctest.Wait()
		assert.Empty(t, audits, "audited once")
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
	})
}

func TestCloseFromInsideAnInputHandlerReturns(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		var client atomic.Pointer[conduit.Client]
		closed := make(chan error, 1)
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			closed <- client.Load().Close()
			return &conduit.ListRootsResult{}, nil
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h})
		client.Store(c)
		e.ask(t, c, srv, "roots/list", nil) // never settled: the client closes
		require.NoError(t, <-closed)
		<-c.Done()
		synctest.Wait()
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
	})
}
