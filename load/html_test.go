package load_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/load"
)

// loadsFromNetwork matches what would make a browser fetch something: a
// src or href, a CSS url() or @import, naming an http(s) URL. (The SVG
// namespace, xmlns="http://www.w3.org/2000/svg", is a name, not a fetch.)
var loadsFromNetwork = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import|<script|<link|<img|<iframe`)

func TestWriteHTML(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options:  conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Uniform(time.Second, 3*time.Second))},
			Sessions: 2, Concurrency: 2, Duration: 5 * time.Second, UnlimitedInput: true,
			Mix: []load.Call{{Tool: "summarise"}},
		})
		var b bytes.Buffer
		require.NoError(t, load.WriteHTML(&b, rep))
		page := b.String()
		assert.Equal(t, 2, strings.Count(page, "<svg"), "the histogram, and the two plots over time in one")
		assert.Equal(t, 2, strings.Count(page, "</svg>"))
		assert.Contains(t, page, "Latency distribution")
		assert.Contains(t, page, "Calls per second")
		assert.Contains(t, page, "p99 latency per second")
		assert.Contains(t, page, "seconds since the start", "no warm-up: the axis does not name one")
		assert.NotContains(t, page, "too short")
		assert.Contains(t, page, "latency:    min ")
		assert.Contains(t, page, "server peak RSS: unknown\n") // in process: no server process
		assert.NotContains(t, page, "<?xml")
		assert.Empty(t, loadsFromNetwork.FindAllString(page, -1))
		assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"))
	})
}

func TestLoadsFromNetworkMatches(t *testing.T) {
	for _, s := range []string{`<img src="https://x/y.png">`, `href='http://x'`, `url(https://x/f.woff)`, `@import "a.css"`, `<script>`, `src="//cdn/x.js"`} {
		assert.True(t, loadsFromNetwork.MatchString(s), s)
	}
	assert.False(t, loadsFromNetwork.MatchString(`<svg xmlns="http://www.w3.org/2000/svg">`))
}

// A run under 3 s draws no plot over time (it was one dot), and says so.
func TestWriteHTMLShortRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Calls:   2, Mix: []load.Call{{Tool: "summarise"}},
		})
		var b bytes.Buffer
		require.NoError(t, load.WriteHTML(&b, rep))
		page := b.String()
		assert.Equal(t, 1, strings.Count(page, "<svg"), "the histogram only")
		assert.Contains(t, page, "The run is too short for a plot over time")
	})
}
