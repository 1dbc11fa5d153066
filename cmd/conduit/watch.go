package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/sanitize"
)

// watchFlags are conduit watch's own flags.
type watchFlags struct {
	tools, prompts, resources bool
	uris                      []string
}

func (a *app) watchCommand() *cobra.Command {
	var f watchFlags
	c := a.command(&cobra.Command{
		Use:   "watch [flags] " + serverArgs,
		Short: "Print the server's change notifications as they arrive",
		Long: `Print each change the server announces, as it arrives, until interrupted: a
list of tools, prompts or resources that changed (--tools, --prompts,
--resources; all three when none of them nor --resource is given), and an update
of each resource URI of --resource (subscribed to: resources/subscribe in the
legacy era). In the modern era the client opens a subscriptions/listen stream for
the kinds the server says change; what the server acknowledged is said on stderr.

Each change is one line: the notification's method, and the resource's URI
(without escape sequences and control characters). With --json, one object per
line: {"method": ..., "params": ...}.`,
		Example: `  conduit watch --tools -- my-server
  conduit watch --json --resource file:///notes.md --url http://127.0.0.1:8080/mcp`,
	}, func(cmd *cobra.Command, args, server []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return a.runWatch(cmd.Context(), f, server)
	})
	fs := c.Flags()
	fs.BoolVar(&f.tools, "tools", false, "print changes of the list of tools")
	fs.BoolVar(&f.prompts, "prompts", false, "print changes of the list of prompts")
	fs.BoolVar(&f.resources, "resources", false, "print changes of the list of resources")
	fs.StringArrayVar(&f.uris, "resource", nil, "subscribe to the resource `URI` and print its updates, repeatable")
	return c
}

// watchPrinter prints the changes, one line each.
type watchPrinter struct {
	a  *app
	mu sync.Mutex
}

func (p *watchPrinter) print(method string, params map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.a.opts.json {
		b, err := json.Marshal(map[string]any{"method": method, "params": params})
		if err == nil {
			_ = p.a.write(append(sanitize.JSON(b), '\n'))
		}
		return
	}
	line := method
	if uri, ok := params["uri"].(string); ok {
		line += " " + oneLine(uri)
	}
	_ = p.a.write([]byte(line + "\n"))
}

func (a *app) runWatch(ctx context.Context, f watchFlags, server []string) error {
	if !f.tools && !f.prompts && !f.resources && len(f.uris) == 0 {
		f.tools, f.prompts, f.resources = true, true, true
	}
	p := &watchPrinter{a: a}
	a.hooks = func(h *conduit.Handlers) {
		if f.tools {
			h.ToolsChanged = func(context.Context, conduit.NotificationContext, *conduit.ToolsChange) {
				p.print("notifications/tools/list_changed", map[string]any{})
			}
		}
		if f.prompts {
			h.PromptsChanged = func(context.Context, conduit.NotificationContext, *conduit.PromptsChange) {
				p.print("notifications/prompts/list_changed", map[string]any{})
			}
		}
		if f.resources {
			h.ResourcesChanged = func(context.Context, conduit.NotificationContext, *conduit.ResourcesChange) {
				p.print("notifications/resources/list_changed", map[string]any{})
			}
		}
		if len(f.uris) > 0 {
			h.ResourceUpdated = func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
				params := map[string]any{"uri": u.URI}
				if u.Title != "" {
					params["title"] = u.Title
				}
				p.print("notifications/resources/updated", params)
			}
		}
	}
	return a.session(ctx, server, func(ctx context.Context, c *conduit.Client) error {
		logger := newLogger(a.stderr, a.opts.verbose, a.opts.json)
		for _, uri := range f.uris {
			if err := c.Subscribe(ctx, uri); err != nil {
				return fmt.Errorf("subscribing to %s: %w", uri, err)
			}
		}
		if c.Era() == conduit.EraModern {
			acked, open := c.Listening()
			if !open {
				logger.Warn("no subscriptions/listen stream: the server offers none of these changes (its capabilities), or did not acknowledge the stream; no change will be printed")
			} else {
				logger.Info("listening", "tools", acked.ToolsListChanged, "prompts", acked.PromptsListChanged,
					"resources", acked.ResourcesListChanged, "subscribed", acked.ResourceSubscriptions)
			}
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the end of a watch
		case <-c.Done():
			return c.Err()
		}
	})
}
