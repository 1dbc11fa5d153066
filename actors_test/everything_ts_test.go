package actors_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// The reference TypeScript server (npm @modelcontextprotocol/server-everything),
// whose simulate-research-query tool runs only as a 2025-11-25 task and,
// when ambiguous, asks for a clarification inside the task.

// everythingTS returns node and the server's entry point, from
// CONDUIT_NODE and CONDUIT_EVERYTHING_TS (`eval "$(.ci/everything-ts)"`
// installs them and sets both; .ci/run does). Without them the test is
// skipped, or fails under CI=true.
func everythingTS(t testing.TB) (node, entry string) {
	t.Helper()
	node, entry = os.Getenv("CONDUIT_NODE"), os.Getenv("CONDUIT_EVERYTHING_TS")
	if node == "" || entry == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CONDUIT_NODE and CONDUIT_EVERYTHING_TS are not set: run eval \"$(.ci/everything-ts)\"")
		}
		t.Skip("the reference TypeScript server is not installed: eval \"$(.ci/everything-ts)\" installs it")
	}
	return node, entry
}

// researchRun is what one run of simulate-research-query saw.
type researchRun struct {
	mu       sync.Mutex
	audits   []conduit.AuditRecord
	seen     []conduit.RequestContext
	statuses []string
}

func (r *researchRun) options() conduit.Options {
	return conduit.Options{Tasks: true, Handlers: conduit.Handlers{
		Elicitation: func(_ context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			r.mu.Lock()
			r.seen = append(r.seen, req.RequestContext)
			r.mu.Unlock()
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "historical"}}, nil
		},
	}, Audit: func(a conduit.AuditRecord) { r.mu.Lock(); r.audits = append(r.audits, a); r.mu.Unlock() }}
}

// call runs the tool with its clarification and checks the outcome.
func (r *researchRun) call(t *testing.T, c *conduit.Client) {
	t.Helper()
	require.Equal(t, "2025-11-25", c.ProtocolVersion())
	res, err := c.CallTool(callCtx(t), "simulate-research-query", map[string]any{"topic": "go", "ambiguous": true},
		conduit.WithAwaitTask(), conduit.WithAssigns(map[string]any{"call": "research"}),
		conduit.WithTaskStatus(func(tk conduit.Task) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.statuses = append(r.statuses, tk.Status)
		}))
	require.NoError(t, err)
	text := textOf(t, res)
	assert.Contains(t, text, "# Research Report: go (historical)")
	assert.Contains(t, text, "`working` → `input_required` → `working` → `completed`")

	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.audits, 1, "one input request: the clarification")
	a := r.audits[0]
	assert.Equal(t, "elicitation/create", a.Method)
	assert.Equal(t, conduit.OutcomeAnswered, a.Outcome)
	assert.False(t, a.RelatedRequestID.IsZero(), "audited with the call that created the task")
	require.Len(t, r.seen, 1)
	assert.Equal(t, a.RelatedRequestID, r.seen[0].RelatedRequestID)
	assert.Equal(t, map[string]any{"call": "research"}, r.seen[0].Assigns, "the task's call's assigns")
	assert.Equal(t, "working", r.statuses[0])
	assert.Contains(t, r.statuses, "input_required")
}

func TestEverythingTSResearchTaskOverStdio(t *testing.T) {
	node, entry := everythingTS(t)
	r := &researchRun{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.Command{Path: node, Args: []string{entry, "stdio"}, CloseTimeout: 2 * time.Second}, r.options())
	require.NoError(t, err)
	defer c.Close()
	r.call(t, c)
}

func TestEverythingTSResearchTaskOverStreamableHTTP(t *testing.T) {
	node, entry := everythingTS(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := strings.Cut(l.Addr().String(), ":")
	require.NoError(t, l.Close())
	cmd := exec.Command(node, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%s/mcp", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, 10*time.Second, 20*time.Millisecond)
	r := &researchRun{}
	c := connectHTTP(t, url, r.options())
	r.call(t, c)
}

// TestEverythingTSSeesTheRootChange: npm server-everything caches the
// roots it lists on connect; after RootsChanged it asks again, and its own
// get-roots-list tool reports the new root.
func TestEverythingTSSeesTheRootChange(t *testing.T) {
	node, entry := everythingTS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	root := "file:///srv/conduit-root-a"
	asked := make(chan string, 8)
	h := conduit.Handlers{Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked <- root
		return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: root, Name: "r"}}}, nil
	}}
	c, err := conduit.Connect(ctx, &transport.Command{Path: node, Args: []string{entry, "stdio"}, CloseTimeout: 2 * time.Second}, conduit.Options{Handlers: h, Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	rootsText := func() string {
		r, err := c.CallTool(ctx, "get-roots-list", map[string]any{})
		require.NoError(t, err)
		var b strings.Builder
		for _, x := range r.Content {
			b.WriteString(x.Text)
		}
		return b.String()
	}
	// The server lists the roots once initialized.
	for got := ""; got != "file:///srv/conduit-root-a"; {
		select {
		case got = <-asked:
		case <-ctx.Done():
			t.Fatal("the server never listed the roots")
		}
	}
	assert.Contains(t, rootsText(), "conduit-root-a")

	mu.Lock()
	root = "file:///srv/conduit-root-b"
	mu.Unlock()
	require.NoError(t, c.RootsChanged(ctx))
	for got := ""; got != "file:///srv/conduit-root-b"; {
		select {
		case got = <-asked:
		case <-ctx.Done():
			t.Fatal("the server did not ask for the roots again")
		}
	}
	// The answer is on its way to the server ahead of the next call.
	text := rootsText()
	for i := 0; i < 20 && !strings.Contains(text, "conduit-root-b"); i++ {
		text = rootsText()
	}
	assert.Contains(t, text, "conduit-root-b")
	assert.NotContains(t, text, "conduit-root-a")
}
