package admin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/host"
)

// hostile is markup a server writes where the page shows it.
const hostile = `x<img src=x onerror=alert(1)>y`

// Headless Chromium loads the status page: it shows every server, a tool
// name holding markup as text (the DOM has no such element), a server's
// state change live when its process is killed (no reload), and keeps
// only the last RecentEvents events however many come. The screenshot is
// saved in the test's temp dir (and at $CONDUIT_SCREENSHOT when set: the
// one in docs/).
func TestStatusPageInChromium(t *testing.T) {
	chromium := program(t, "chromium", "chromium")
	noisy := crashing() // a flood of events: 10 before it parks
	noisy.Conduit.Restart.Intensity = 10
	f := start(t, map[string]host.Server{
		"every": pyServer(t, "echo", "t"+hostile),
		"other": pyServer(t, "echo"),
		"noisy": noisy,
	}, Options{RecentEvents: 5})
	until(t, f.h, func(sts []host.Status) bool {
		return state(sts, "every") == host.StateReady && state(sts, "other") == host.StateReady && state(sts, "noisy") == host.StateParked
	})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1100, 700))...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.web.URL+"/"),
		chromedp.WaitReady(chromedp.CSS("#servers")),
	))
	// The stream opens at a person's first move (or after 5 s): a click.
	live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live").textContent`))
	require.NoError(t, err)
	assert.Regexp(t, `^as of `, live, "the stream opened before any move")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.MouseClickXY(5, 5),
		// The stream is open: its first events (one per server) are shown.
		chromedp.WaitReady(chromedp.Search(`//span[@id="live" and text()="live"]`)),
	))
	eval := func(js string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js))
		require.NoError(t, err, js)
		return v
	}
	assert.Equal(t, []any{"every", "noisy", "other"}, eval(`Array.from(document.querySelectorAll("#servers tbody tr")).map(r => r.getAttribute("data-server"))`))
	assert.Equal(t, 0.0, eval(`document.querySelectorAll("img").length`), "a tool name's markup became an element")
	assert.Contains(t, eval(`document.body.textContent`), "t"+hostile)
	assert.Equal(t, 5.0, eval(`window.notReloaded = true; document.querySelectorAll("#events li").length`), "the page keeps the last 5 events")

	// Kill the other server's process: its row changes without a reload.
	pid := 0
	for _, st := range f.h.Status() {
		if st.Server == "other" {
			pid = st.PID
		}
	}
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitReady(chromedp.Search(`//ul[@id="events"]/li[contains(., " other restarting")]`))))
	assert.Equal(t, true, eval(`window.notReloaded === true`), "the page was reloaded")
	assert.Equal(t, 5.0, eval(`document.querySelectorAll("#events li").length`))
	assert.Equal(t, 0.0, eval(`document.querySelectorAll("img").length`))
	// Once restarted it is shown ready again.
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitReady(chromedp.Search(`//tr[@data-server="other"]/td[@data-field="state" and text()="ready"]`))))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(t.TempDir(), "status.png"), png, 0o600))
	if out := os.Getenv("CONDUIT_SCREENSHOT"); out != "" {
		require.NoError(t, os.WriteFile(out, png, 0o644))
	}
}

// A tool that waits for the network to be idle before it takes a
// snapshot gets one: headless Chromium's --dump-dom under a virtual time
// budget returns the page with every server (the stream, which never
// ends, opens only later), a tool name's markup as text.
func TestStatusPageSnapshot(t *testing.T) {
	chromium := program(t, "chromium", "chromium")
	f := start(t, map[string]host.Server{"every": pyServer(t, "t"+hostile), "broken": crashing()}, Options{})
	until(t, f.h, func(sts []host.Status) bool { return state(sts, "every") == host.StateReady })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dom, err := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000", "--dump-dom", f.web.URL+"/").Output()
	require.NoError(t, err, "chromium did not return the page in time")
	assert.Contains(t, string(dom), `<tr data-server="every"`)
	assert.Contains(t, string(dom), `<tr data-server="broken"`)
	assert.Contains(t, string(dom), "tx&lt;img src=x onerror=alert(1)&gt;y")
	assert.NotContains(t, string(dom), "<img")
}
