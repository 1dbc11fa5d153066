package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/sanitize"
)

func (a *app) runCall(cmd *cobra.Command, args, server []string) error {
	switch {
	case len(args) == 0:
		return usagef("missing TOOL: conduit call [flags] TOOL [ARGS_JSON] %s", serverArgs)
	case len(args) > 2:
		return usagef("too many arguments before --: %q (put the server command after --)", args[2:])
	}
	tool := args[0]
	var toolArgs json.RawMessage
	if len(args) == 2 {
		var err error
		if toolArgs, err = objectArg("ARGS_JSON", args[1]); err != nil {
			return err
		}
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		return a.callTool(ctx, tool, toolArgs, c.CallTool)
	})
}

// callTool calls tool with call and prints the result; a result with
// isError is an error (exit 1). A tool that runs as a task is awaited, its
// status shown like progress.
func (a *app) callTool(ctx context.Context, tool string, toolArgs json.RawMessage, call func(context.Context, string, any, ...conduit.CallOption) (*conduit.CallToolResult, error)) error {
	var res *conduit.CallToolResult
	var err error
	// Ask for progress: it is shown as a bar on stderr. A task's status is
	// shown the same way.
	opts := []conduit.CallOption{conduit.WithProgressToken("conduit-call"), conduit.WithAwaitTask(),
		conduit.WithTaskStatus(a.showTaskStatus)}
	if a.opts.tasks {
		opts = append(opts, conduit.WithTask())
	}
	if toolArgs != nil { // a nil RawMessage in an interface would be sent as null
		res, err = call(ctx, tool, toolArgs, opts...)
	} else {
		res, err = call(ctx, tool, nil, opts...)
	}
	if err != nil {
		if a.opts.noTasks && needsTasks(err) {
			return &exitError{code: exitFailed, msg: plain(err) + " (the tool runs only as a task: drop --no-tasks)", err: err}
		}
		return err
	}
	if err := a.printCallResult(res); err != nil {
		return err
	}
	if res.IsError {
		return &exitError{code: exitFailed, err: fmt.Errorf("tool %s reported an error (isError)", tool)}
	}
	return nil
}

// needsTasks reports whether err is a modern server's -32021 whose
// requiredCapabilities name the tasks extension.
func needsTasks(err error) bool {
	var rpc *conduit.RPCError
	if !errors.As(err, &rpc) || rpc.Code != conduit.CodeMissingClientCapability {
		return false
	}
	var data struct {
		Required struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if json.Unmarshal(rpc.Data, &data) != nil {
		return false
	}
	_, ok := data.Required.Extensions[era.TasksExtension]
	return ok
}

func (a *app) runTools(cmd *cobra.Command, args, server []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(nonNil(tools))
		}
		a.noteDeclared()
		return a.table(toolRows(tools))
	})
}

// toolRows are the lines of conduit tools: name and description.
func toolRows(tools []conduit.Tool) func(io.Writer) {
	return func(w io.Writer) {
		for _, t := range tools {
			fmt.Fprintf(w, "%s\t%s\n", oneLine(t.Name), firstLine(t.Description))
		}
	}
}

func (a *app) runResources(cmd *cobra.Command, args, server []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		resources, err := c.ListResources(ctx)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(nonNil(resources))
		}
		return a.table(resourceRows(resources))
	})
}

// resourceRows are the lines of conduit resources: URI, name, description.
func resourceRows(resources []conduit.Resource) func(io.Writer) {
	return func(w io.Writer) {
		for _, r := range resources {
			fmt.Fprintf(w, "%s\t%s\t%s\n", oneLine(r.URI), oneLine(r.Name), firstLine(r.Description))
		}
	}
}

func (a *app) runPrompts(cmd *cobra.Command, args, server []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		prompts, err := c.ListPrompts(ctx)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(nonNil(prompts))
		}
		return a.table(promptRows(prompts))
	})
}

// promptRows are the lines of conduit prompts: name, arguments (required
// ones marked *), description.
func promptRows(prompts []conduit.Prompt) func(io.Writer) {
	return func(w io.Writer) {
		for _, p := range prompts {
			var names []string
			for _, arg := range p.Arguments {
				n := oneLine(arg.Name)
				if arg.Required {
					n += "*"
				}
				names = append(names, n)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", oneLine(p.Name), strings.Join(names, " "), firstLine(p.Description))
		}
	}
}

func (a *app) runRead(cmd *cobra.Command, args, server []string) error {
	switch {
	case len(args) == 0:
		return usagef("missing URI: conduit read [flags] URI %s", serverArgs)
	case len(args) > 1:
		return usagef("too many arguments before --: %q (put the server command after --)", args[1:])
	}
	uri := args[0]
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		res, err := c.ReadResource(ctx, uri)
		if err != nil {
			return err
		}
		return a.printReadResult(res)
	})
}

// printReadResult prints what conduit read read: text as is (sanitised at
// a terminal), anything else as compact JSON; with --json, the whole
// result.
func (a *app) printReadResult(res *conduit.ReadResourceResult) error {
	if a.opts.json {
		return a.printJSON(res)
	}
	var b bytes.Buffer
	for _, item := range res.Contents {
		if item.Blob == "" {
			text := a.serverText(item.Text)
			b.WriteString(text)
			if !strings.HasSuffix(text, "\n") {
				b.WriteByte('\n')
			}
			continue
		}
		if err := appendCompact(&b, item); err != nil {
			return err
		}
	}
	return a.write(b.Bytes())
}

func (a *app) runPrompt(cmd *cobra.Command, args, server []string) error {
	switch {
	case len(args) == 0:
		return usagef("missing NAME: conduit prompt [flags] NAME [ARGS_JSON] %s", serverArgs)
	case len(args) > 2:
		return usagef("too many arguments before --: %q (put the server command after --)", args[2:])
	}
	name := args[0]
	var promptArgs map[string]string
	if len(args) == 2 {
		raw, err := objectArg("ARGS_JSON", args[1])
		if err != nil {
			return err
		}
		// Into json.RawMessage first: a null would decode into a string as
		// "" and be sent as an empty argument.
		var values map[string]json.RawMessage
		if err := json.Unmarshal(raw, &values); err != nil {
			return usagef("ARGS_JSON: %v", err)
		}
		promptArgs = make(map[string]string, len(values))
		for k, v := range values {
			var s string
			if string(v) == "null" || json.Unmarshal(v, &s) != nil {
				return usagef("ARGS_JSON: prompt arguments must all be strings: %s", args[1])
			}
			promptArgs[k] = s
		}
	}
	return a.session(cmd.Context(), server, func(ctx context.Context, c *conduit.Client) error {
		res, err := c.GetPrompt(ctx, name, promptArgs)
		if err != nil {
			return err
		}
		if a.opts.json {
			return a.printJSON(res)
		}
		var b bytes.Buffer
		for _, m := range res.Messages {
			fmt.Fprintf(&b, "[%s] ", oneLine(m.Role))
			if m.Content.Type == "text" {
				b.WriteString(a.serverText(m.Content.Text))
				b.WriteByte('\n')
				continue
			}
			if err := appendCompact(&b, m.Content); err != nil {
				return err
			}
		}
		return a.write(b.Bytes())
	})
}

// printCallResult prints a tool result: with --json the whole result;
// otherwise each text block's text on its own line, other blocks as compact
// JSON, then the structured content as compact JSON.
// textRepeats reports whether a text block of res is its structured
// content as JSON (the specification asks a tool that returns structured
// content to return it serialised in a text block too, for older
// clients): printed once, not twice.
func textRepeats(res *conduit.CallToolResult) bool {
	var structured any
	if json.Unmarshal(res.StructuredContent, &structured) != nil {
		return false
	}
	for _, block := range res.Content {
		var v any
		if block.Type == "text" && json.Unmarshal([]byte(block.Text), &v) == nil && reflect.DeepEqual(v, structured) {
			return true
		}
	}
	return false
}

func (a *app) printCallResult(res *conduit.CallToolResult) error {
	if a.opts.json {
		if res.Content == nil {
			res.Content = []conduit.ContentBlock{}
		}
		return a.printJSON(res)
	}
	var b bytes.Buffer
	for _, block := range res.Content {
		if block.Type == "text" {
			// Written as it is, not copied into b: a big result is
			// mostly text, and is held once (sanitised, at a terminal).
			if b.Len() > 0 {
				if err := a.write(b.Bytes()); err != nil {
					return err
				}
				b.Reset()
			}
			if _, err := io.WriteString(a.std.out, a.serverText(block.Text)); err != nil {
				return err
			}
			b.WriteByte('\n')
			continue
		}
		if err := appendCompact(&b, block); err != nil {
			return err
		}
	}
	if len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" && !textRepeats(res) {
		var c bytes.Buffer
		if err := json.Compact(&c, res.StructuredContent); err != nil {
			return fmt.Errorf("structuredContent: %w", err)
		}
		b.Write(sanitize.JSON(c.Bytes()))
		b.WriteByte('\n')
	}
	return a.write(b.Bytes())
}

// objectArg checks that s is one JSON object.
func objectArg(name, s string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, usagef("%s must be a JSON object, such as '{\"key\": \"value\"}': %s", name, s)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, usagef("%s must be one JSON object: %s", name, s)
	}
	return json.RawMessage(strings.TrimSpace(s)), nil
}

func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected arguments before --: %q (put the server command after --)", args)
	}
	return nil
}

func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return a.write(append(b, '\n'))
}

func (a *app) write(b []byte) error {
	_, err := a.std.out.Write(b)
	return err
}

// table prints rows of tab-separated cells in aligned columns.
func (a *app) table(rows func(w io.Writer)) error {
	return a.write(tableText(rows))
}

// tableText is rows in aligned columns, without trailing spaces.
func tableText(rows func(w io.Writer)) []byte {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	rows(tw)
	_ = tw.Flush() // a bytes.Buffer does not fail
	var out bytes.Buffer
	for line := range strings.Lines(b.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// appendCompact appends v as one line of JSON, escaped with sanitize.JSON:
// a server's strings in it show as what they are.
func appendCompact(b *bytes.Buffer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(sanitize.JSON(raw))
	b.WriteByte('\n')
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// firstLine is the first line of s, for one-line listings.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return oneLine(s)
}

// oneLine keeps a server-chosen name on one line and out of the table's
// columns: sanitize.Text, the one implementation, removes escape sequences
// whole (no "[31m" left behind), C0 and C1 controls, bidi and invisible
// controls, and turns each run of line breaks and tabs into one space.
func oneLine(s string) string {
	return sanitize.Text(strings.TrimSpace(s), 0)
}
