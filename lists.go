package conduit

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// Wire types of the list methods and of completion.
type (
	// ResourceTemplate is one URI template a server offers resources
	// under (resources/templates/list).
	ResourceTemplate = messages.ResourceTemplate
	// CompleteParams are what Complete sends: the reference (PromptRef or
	// ResourceRef), the argument being completed with what was typed, and
	// optionally the arguments already resolved.
	CompleteParams = messages.CompleteParams
	// CompleteReference is what the argument belongs to: Type RefPrompt
	// with Name, or RefResource with URI (PromptRef, ResourceRef).
	CompleteReference = messages.CompleteReference
	// CompleteArgument is the argument's Name and the Value typed so far.
	CompleteArgument = messages.CompleteArgument
	// CompleteContext holds the Arguments already resolved, by name.
	CompleteContext = messages.CompleteContext
	// CompleteResult is the server's answer: Completion.Values (at most
	// 100), Completion.Total when known, Completion.HasMore, and Meta.
	CompleteResult = messages.CompleteResult
	// Completion is the server's suggestions: Values, Total (nil when
	// unknown) and HasMore.
	Completion = messages.Completion
)

// Completion reference types (CompleteReference.Type).
const (
	RefPrompt   = messages.RefPrompt
	RefResource = messages.RefResource
)

// Page is one page of a paginated list: its items, the cursor of the next
// page ("" on the last one) and the result's _meta.
type Page[T any] struct {
	Items      []T
	NextCursor string
	Meta       json.RawMessage
}

// maxPages stops a server that returns cursors forever: listing more pages
// than this, as ListTools or an iterator such as Tools does, fails with
// KindProtocol.
const maxPages = 1000

// listPage asks method for the page at cursor ("" for the first); pick
// takes the items, the next cursor and the _meta out of one result. It is
// the one primitive under the List*Page methods, the iterators and the
// List* methods that gather every page.
func listPage[R, T any](ctx context.Context, c *Client, method, cursor string, opts []CallOption, pick func(*R) ([]T, string, json.RawMessage)) (*Page[T], error) {
	var r R
	if err := c.Call(ctx, method, messages.ListParams{Cursor: cursor}, &r, opts...); err != nil {
		return nil, err
	}
	items, next, meta := pick(&r)
	return &Page[T]{Items: items, NextCursor: next, Meta: meta}, nil
}

// pages yields the pages of a list from the first, fetching each only when
// the one before has been consumed. It stops, with a KindProtocol error,
// at a cursor the server already gave during this listing (it would loop)
// and after maxPages pages.
func pages[T any](method string, fetch func(cursor string) (*Page[T], error)) iter.Seq2[*Page[T], error] {
	return func(yield func(*Page[T], error) bool) {
		// Digests, not the cursors: a server's cursors may be large.
		seen := map[[sha256.Size]byte]bool{}
		cursor := ""
		for range maxPages {
			p, err := fetch(cursor)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(p, nil) || p.NextCursor == "" {
				return
			}
			d := sha256.Sum256([]byte(p.NextCursor))
			if seen[d] {
				yield(nil, &Error{Kind: KindProtocol, Method: method, Message: fmt.Sprintf("the server repeated cursor %q", clip(p.NextCursor))})
				return
			}
			seen[d] = true
			cursor = p.NextCursor
		}
		yield(nil, &Error{Kind: KindProtocol, Method: method, Message: fmt.Sprintf("more than %d pages", maxPages)})
	}
}

// clip cuts a server's string for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// items yields the items of pages one by one; an error is yielded once,
// with the zero item, and ends the sequence.
func items[T any](ps iter.Seq2[*Page[T], error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p, err := range ps {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

// gather returns every item of pages, or the first error.
func gather[T any](ps iter.Seq2[*Page[T], error]) ([]T, error) {
	var all []T
	for p, err := range ps {
		if err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
	}
	return all, nil
}

// ListToolsPage lists one page of tools: the first for cursor "", else the
// page at a NextCursor the server gave. In the modern era a tool whose
// x-mcp-header annotations are invalid is dropped (and logged), and before
// 2025-06-18 a tool's outputSchema, as ListTools does; only ListTools gives the transport the tools'
// Mcp-Param-* headers (a tools/call refused for them lists the tools
// again, as without any listing).
func (c *Client) ListToolsPage(ctx context.Context, cursor string, opts ...CallOption) (*Page[Tool], error) {
	p, err := listPage(ctx, c, messages.MethodListTools, cursor, opts, func(r *messages.ListToolsResult) ([]Tool, string, json.RawMessage) {
		return r.Tools, r.NextCursor, r.Meta
	})
	if err != nil {
		return nil, err
	}
	if c.Era() == EraModern {
		p.Items, _ = c.validTools(p.Items)
	} else {
		olderRevisionTools(c.ProtocolVersion(), p.Items)
	}
	return p, nil
}

// validTools drops the tools whose x-mcp-header annotations are invalid
// (logging each) and returns the others with their headers by tool name.
func (c *Client) validTools(tools []Tool) ([]Tool, map[string]map[string]string) {
	kept := tools[:0]
	headers := map[string]map[string]string{}
	for _, t := range tools {
		h, err := era.ToolHeaders(t.InputSchema)
		if err != nil {
			c.opts.Logger.Warn("tool dropped: invalid x-mcp-header annotation", "tool", t.Name, "err", err)
			continue
		}
		if h != nil {
			headers[t.Name] = h
		}
		kept = append(kept, t)
	}
	return kept, headers
}

// Tools iterates over every tool, fetching each page when the loop reaches
// it; an error ends the iteration (yielded with a zero Tool).
func (c *Client) Tools(ctx context.Context, opts ...CallOption) iter.Seq2[Tool, error] {
	return items(c.toolPages(ctx, opts))
}

func (c *Client) toolPages(ctx context.Context, opts []CallOption) iter.Seq2[*Page[Tool], error] {
	return pages(messages.MethodListTools, func(cursor string) (*Page[Tool], error) { return c.ListToolsPage(ctx, cursor, opts...) })
}

// ListTools lists every tool, following pagination. In the modern era a
// tool whose x-mcp-header annotations are invalid is dropped (and logged),
// and the valid ones are given to the transport (Mcp-Param-* headers).
func (c *Client) ListTools(ctx context.Context, opts ...CallOption) ([]Tool, error) {
	s := c.sess()
	tools, err := gather(c.toolPages(ctx, opts))
	if err != nil {
		return nil, err
	}
	if s.rt.Era() != EraModern {
		rememberTools(s, tools)
		return tools, nil
	}
	tools, headers := c.validTools(tools) // the pages dropped the invalid ones
	if th, ok := s.rt.Conn().(transport.ToolHeaders); ok {
		th.SetToolHeaders(headers)
	}
	rememberTools(s, tools)
	return tools, nil
}

// ListResourcesPage lists one page of resources (cursor "" for the first).
func (c *Client) ListResourcesPage(ctx context.Context, cursor string, opts ...CallOption) (*Page[Resource], error) {
	return listPage(ctx, c, messages.MethodListResources, cursor, opts, func(r *messages.ListResourcesResult) ([]Resource, string, json.RawMessage) {
		return r.Resources, r.NextCursor, r.Meta
	})
}

// Resources iterates over every resource, fetching pages lazily.
func (c *Client) Resources(ctx context.Context, opts ...CallOption) iter.Seq2[Resource, error] {
	return items(c.resourcePages(ctx, opts))
}

func (c *Client) resourcePages(ctx context.Context, opts []CallOption) iter.Seq2[*Page[Resource], error] {
	return pages(messages.MethodListResources, func(cursor string) (*Page[Resource], error) { return c.ListResourcesPage(ctx, cursor, opts...) })
}

// ListResources lists every resource, following pagination.
func (c *Client) ListResources(ctx context.Context, opts ...CallOption) ([]Resource, error) {
	return gather(c.resourcePages(ctx, opts))
}

// ListResourceTemplatesPage lists one page of resource templates (cursor
// "" for the first).
func (c *Client) ListResourceTemplatesPage(ctx context.Context, cursor string, opts ...CallOption) (*Page[ResourceTemplate], error) {
	return listPage(ctx, c, messages.MethodListTemplates, cursor, opts, func(r *messages.ListResourceTemplatesResult) ([]ResourceTemplate, string, json.RawMessage) {
		return r.ResourceTemplates, r.NextCursor, r.Meta
	})
}

// ResourceTemplates iterates over every resource template, fetching pages
// lazily.
func (c *Client) ResourceTemplates(ctx context.Context, opts ...CallOption) iter.Seq2[ResourceTemplate, error] {
	return items(c.templatePages(ctx, opts))
}

func (c *Client) templatePages(ctx context.Context, opts []CallOption) iter.Seq2[*Page[ResourceTemplate], error] {
	return pages(messages.MethodListTemplates, func(cursor string) (*Page[ResourceTemplate], error) {
		return c.ListResourceTemplatesPage(ctx, cursor, opts...)
	})
}

// ListResourceTemplates lists every resource template
// (resources/templates/list), following pagination: the URI templates
// (RFC 6570) under which the server offers resources it does not list.
func (c *Client) ListResourceTemplates(ctx context.Context, opts ...CallOption) ([]ResourceTemplate, error) {
	return gather(c.templatePages(ctx, opts))
}

// ListPromptsPage lists one page of prompts (cursor "" for the first).
func (c *Client) ListPromptsPage(ctx context.Context, cursor string, opts ...CallOption) (*Page[Prompt], error) {
	return listPage(ctx, c, messages.MethodListPrompts, cursor, opts, func(r *messages.ListPromptsResult) ([]Prompt, string, json.RawMessage) {
		return r.Prompts, r.NextCursor, r.Meta
	})
}

// Prompts iterates over every prompt, fetching pages lazily.
func (c *Client) Prompts(ctx context.Context, opts ...CallOption) iter.Seq2[Prompt, error] {
	return items(c.promptPages(ctx, opts))
}

func (c *Client) promptPages(ctx context.Context, opts []CallOption) iter.Seq2[*Page[Prompt], error] {
	return pages(messages.MethodListPrompts, func(cursor string) (*Page[Prompt], error) { return c.ListPromptsPage(ctx, cursor, opts...) })
}

// ListPrompts lists every prompt, following pagination.
func (c *Client) ListPrompts(ctx context.Context, opts ...CallOption) ([]Prompt, error) {
	return gather(c.promptPages(ctx, opts))
}
