package admin

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"time"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/sanitize"
)

// Bounds of what the page shows of one server.
const (
	pageTools    = 100 // tool names
	pageErrRunes = 500 // of its last error, of a stderr line
)

// event is what /events sends by default: the fields of conduit host
// --json's object the page reads.
type event struct {
	Time     time.Time  `json:"time"`
	Server   string     `json:"server"`
	State    host.State `json:"state"`
	Restarts int        `json:"restarts"`
	Error    string     `json:"error,omitempty"`
	Tools    int        `json:"tools"`
	Calls    int64      `json:"calls"`
}

func defaultEvent(ev host.Event) any {
	e := event{Time: ev.Time.UTC(), Server: ev.Server, State: ev.State, Restarts: ev.Restarts, Tools: ev.Tools, Calls: ev.Calls}
	if ev.Err != nil {
		e.Error = ev.Err.Error()
	}
	return e
}

type pageServer struct {
	Name, State, Error string
	Restarts, Tools    int
	InFlight           int
	Calls              int64
	ToolNames          []string
	MoreTools          int
	Stderr             []string
}

type pageEvent struct {
	Time, Server, State, Error string
}

type pageData struct {
	Title    string
	Now      string
	Servers  []pageServer
	Waiting  []Input
	Events   []pageEvent
	MaxItems int
	Script   template.JS
	Style    template.CSS
}

// pageScript follows /events: it updates each server's row and adds the
// event on top of the list, which keeps the last data-max. It only ever
// sets textContent: nothing a server wrote becomes markup. It opens the
// stream 5 s after the page loads, or at a person's first move.
const pageScript = `
(function () {
  var table = document.getElementById("servers");
  var list = document.getElementById("events");
  var max = parseInt(list.getAttribute("data-max"), 10) || 50;
  var status = document.getElementById("live");
  var connectAfter = 5000;
  function cell(row, name) {
    for (var i = 0; i < row.cells.length; i++) {
      if (row.cells[i].getAttribute("data-field") === name) { return row.cells[i]; }
    }
    return null;
  }
  function rowOf(server) {
    var rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-server") === server) { return rows[i]; }
    }
    var row = table.tBodies[0].insertRow(-1);
    row.setAttribute("data-server", server);
    ["server", "state", "restarts", "tools", "calls", "in_flight", "error"].forEach(function (f) {
      var c = row.insertCell(-1);
      c.setAttribute("data-field", f);
    });
    cell(row, "server").textContent = server;
    return row;
  }
  function show(ev) {
    var row = rowOf(String(ev.server));
    cell(row, "state").textContent = String(ev.state);
    row.className = "state-" + String(ev.state).replace(/[^a-z]/g, "");
    cell(row, "restarts").textContent = String(ev.restarts);
    cell(row, "tools").textContent = String(ev.tools);
    cell(row, "calls").textContent = String(ev.calls);
    cell(row, "error").textContent = ev.error ? String(ev.error).slice(0, 500) : "";
    var li = document.createElement("li");
    var at = String(ev.time).replace(/^[^T]*T/, "").slice(0, 12);
    li.textContent = at + " " + String(ev.server) + " " + String(ev.state) + (ev.error ? ": " + String(ev.error).slice(0, 500) : "");
    list.insertBefore(li, list.firstChild);
    while (list.children.length > max) { list.removeChild(list.lastChild); }
  }
  var source = null;
  function connect() {
    if (source || !window.EventSource) { return; }
    source = new EventSource("events");
    source.onopen = function () { status.textContent = "live"; };
    source.onerror = function () { status.textContent = "reconnecting"; };
    source.onmessage = function (m) {
      try { show(JSON.parse(m.data)); } catch (e) { /* not an event */ }
    };
  }
  // The stream never ends: opened at once, the network would never be
  // idle for a tool that waits for that to take a snapshot (headless
  // Chromium's --virtual-time-budget). A person's first move opens it.
  ["mousemove", "pointerdown", "keydown", "touchstart"].forEach(function (e) {
    window.addEventListener(e, connect, { once: true, passive: true });
  });
  setTimeout(connect, connectAfter);
})();
`

const pageStyle = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr.state-ready td[data-field=state] { color: #186a1d; font-weight: bold; }
tr.state-parked td[data-field=state], tr.state-restarting td[data-field=state] { color: #a31515; font-weight: bold; }
td[data-field=error] { max-width: 40em; word-break: break-word; }
#live { color: #666; font-size: 12px; }
ul#events { font-family: ui-monospace, monospace; font-size: 12px; }
details { font-size: 12px; }
`

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>{{.Style}}</style></head>
<body>
<h1>{{.Title}} <span id="live">as of {{.Now}}</span></h1>
<h2>Servers</h2>
<table id="servers"><thead><tr><th>server</th><th>state</th><th>restarts</th><th>tools</th><th>calls</th><th>in flight</th><th>last error</th></tr></thead>
<tbody>{{range .Servers}}
<tr data-server="{{.Name}}" class="state-{{.State}}"><td data-field="server">{{.Name}}{{if .ToolNames}}<details><summary>tools</summary>{{range .ToolNames}}<div>{{.}}</div>{{end}}{{if .MoreTools}}<div>and {{.MoreTools}} more</div>{{end}}</details>{{end}}</td><td data-field="state">{{.State}}</td><td data-field="restarts">{{.Restarts}}</td><td data-field="tools">{{.Tools}}</td><td data-field="calls">{{.Calls}}</td><td data-field="in_flight">{{.InFlight}}</td><td data-field="error">{{.Error}}{{if .Stderr}}<details><summary>stderr</summary>{{range .Stderr}}<div>{{.}}</div>{{end}}</details>{{end}}</td></tr>{{end}}
</tbody></table>
<h2>Input requests waiting</h2>
{{if .Waiting}}<table id="waiting"><thead><tr><th>server</th><th>kind</th><th>session</th><th>waiting since</th></tr></thead><tbody>
{{range .Waiting}}<tr><td>{{.Server}}</td><td>{{.Method}}</td><td data-field="session">{{.Session}}</td><td>{{.Since.UTC.Format "15:04:05.000"}}</td></tr>{{end}}
</tbody></table>{{else}}<p id="waiting">None.</p>{{end}}
<h2>Recent events</h2>
<ul id="events" data-max="{{.MaxItems}}">{{range .Events}}<li>{{.Time}} {{.Server}} {{.State}}{{if .Error}}: {{.Error}}{{end}}</li>{{end}}</ul>
<script>{{.Script}}</script>
</body></html>
`))

// contentPolicy allows the page's own script and style, by hash, and
// nothing else: no other script, no image, no frame.
var contentPolicy = "default-src 'none'; connect-src 'self'; script-src '" + hash(pageScript) + "'; style-src '" + hash(pageStyle) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	d := pageData{Title: s.opts.Title, Now: time.Now().UTC().Format(time.RFC3339), MaxItems: s.opts.RecentEvents,
		Script: template.JS(pageScript), Style: template.CSS(pageStyle), Waiting: s.m.Waiting()}
	names := map[string][]string{}
	for _, t := range s.h.Tools() {
		names[t.Server] = append(names[t.Server], t.ServerTool)
	}
	for _, st := range s.h.Status() {
		ps := pageServer{Name: st.Server, State: string(st.State), Restarts: st.Restarts, Tools: st.Tools, Calls: st.Calls, InFlight: s.m.inFlightOf(st.Server)}
		if st.Err != nil {
			ps.Error = sanitize.Text(st.Err.Error(), pageErrRunes)
		}
		tools := names[st.Server]
		if len(tools) > pageTools {
			ps.MoreTools = len(tools) - pageTools
			tools = tools[:pageTools]
		}
		for _, t := range tools {
			ps.ToolNames = append(ps.ToolNames, sanitize.Text(t, pageErrRunes))
		}
		for _, l := range st.Stderr {
			ps.Stderr = append(ps.Stderr, sanitize.Text(l, pageErrRunes))
		}
		d.Servers = append(d.Servers, ps)
	}
	for _, ev := range s.recent.list() {
		pe := pageEvent{Time: ev.Time.UTC().Format("15:04:05.000"), Server: ev.Server, State: string(ev.State)}
		if ev.Err != nil {
			pe.Error = sanitize.Text(ev.Err.Error(), pageErrRunes)
		}
		d.Events = append(d.Events, pe)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", contentPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	_ = pageTemplate.Execute(w, d)
}
