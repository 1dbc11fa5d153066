package load_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/load"
)

// chromium is the headless browser's path; without one the test fails in
// CI (.ci/run installs it) and is skipped elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// The page of an open-loop run where the input budget refused most calls
// shows it: the failure rate in its title line, the failed calls apart in
// the histogram, per second and by kind. Checked in headless Chromium,
// with a screenshot in the test's temp dir (CONDUIT_LOAD_SCREENSHOT names
// another copy, as docs/load-failures.png was made).
func TestHTMLShowsFailuresInBrowser(t *testing.T) {
	bin := chromium(t)
	var rep *load.Report
	synctest.Test(t, func(t *testing.T) {
		rep, _ = runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Uniform(10*time.Millisecond, 40*time.Millisecond))},
			Rate:    50, Duration: 10 * time.Second, Concurrency: 8,
			Mix: []load.Call{{Tool: "summarise"}},
		})
	})
	require.Positive(t, rep.Failed)
	require.Positive(t, rep.OK)
	var b bytes.Buffer
	require.NoError(t, load.WriteHTML(&b, rep))
	dir := t.TempDir()
	page := filepath.Join(dir, "load.html")
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o600))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.WindowSize(1100, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	defer cancelTimeout()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+page)))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	heading, err := chromedp.Run(ctx, chromedp.Text("h1"))
	require.NoError(t, err)
	svgs, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	require.NoError(t, err)
	legend, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll("svg text")].some(e => e.textContent.trim() == "failed")`))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	pct := 100 * float64(rep.Failed) / float64(rep.Calls)
	assert.Regexp(t, `^conduit load: [0-9.]+% failed \([0-9]+ of [0-9]+ calls\)`, title)
	assert.Contains(t, title, fmt.Sprintf("%.1f%% failed", pct))
	assert.Equal(t, title, heading)
	assert.Equal(t, 2, svgs, "the histogram; the plots over time in one")
	assert.True(t, legend, "a legend names the failed calls")
	shotPath := filepath.Join(dir, "load.png")
	require.NoError(t, os.WriteFile(shotPath, shot, 0o600))
	assert.Greater(t, len(shot), 10_000)
	if p := os.Getenv("CONDUIT_LOAD_SCREENSHOT"); p != "" {
		require.NoError(t, os.WriteFile(p, shot, 0o644))
	}
}
