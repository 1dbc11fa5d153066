package conduit_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// listServer is a scripted 2025-11-25 server on an in-memory pair: its
// tools and resource templates come 2 a page, it completes prompt
// "greet"'s argument "name", lists one task, and echoes the _meta of a
// prompts/get in the prompt's description.
func listServer(conn transport.Conn) {
	ctx := context.Background()
	reply := func(id, result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		_ = conn.Write(ctx, b)
	}
	page := func(cursor any, key string, items ...any) map[string]any {
		r := map[string]any{key: items[:2], "nextCursor": "page-2"}
		if cursor == "page-2" {
			r = map[string]any{key: items[2:]}
		}
		return r
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			ID     any
			Method string
			Params map[string]any
		}
		_ = json.Unmarshal(msg.Data, &m)
		switch m.Method {
		case "server/discover":
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			_ = conn.Write(ctx, b)
		case "initialize":
			reply(m.ID, map[string]any{"protocolVersion": "2025-11-25", "serverInfo": map[string]any{"name": "script", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{}, "prompts": map[string]any{}, "resources": map[string]any{}, "completions": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}}}})
		case "tools/list":
			reply(m.ID, page(m.Params["cursor"], "tools", map[string]any{"name": "add"}, map[string]any{"name": "echo"}, map[string]any{"name": "sleep"}))
		case "resources/templates/list":
			reply(m.ID, page(m.Params["cursor"], "resourceTemplates",
				map[string]any{"uriTemplate": "file:///logs/{day}", "name": "logs"},
				map[string]any{"uriTemplate": "file:///users/{id}", "name": "users"},
				map[string]any{"uriTemplate": "db://{table}/{key}", "name": "rows"}))
		case "completion/complete":
			arg := m.Params["argument"].(map[string]any)
			reply(m.ID, map[string]any{"completion": map[string]any{"values": []string{arg["value"].(string) + "da", arg["value"].(string) + "lan"}, "total": 7, "hasMore": true}})
		case "tasks/list":
			reply(m.ID, map[string]any{"tasks": []any{map[string]any{"taskId": "t-1", "status": "working", "ttl": 60000, "pollInterval": 1000}}})
		case "prompts/get":
			meta, _ := json.Marshal(m.Params["_meta"])
			reply(m.ID, map[string]any{"description": "got _meta " + string(meta), "messages": []any{}, "_meta": map[string]any{"cost": 3}})
		}
	}
}

func connectListServer() *conduit.Client {
	clientSide, serverSide := transport.NewMemoryPair()
	go listServer(serverSide)
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{})
	if err != nil {
		panic(err)
	}
	return c
}

// Every resource template, all pages gathered.
func ExampleClient_ListResourceTemplates() {
	c := connectListServer()
	defer c.Close()
	templates, err := c.ListResourceTemplates(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range templates {
		fmt.Println(t.URITemplate, t.Name)
	}
	// Output:
	// file:///logs/{day} logs
	// file:///users/{id} users
	// db://{table}/{key} rows
}

// Completing a prompt's argument from what was typed so far.
func ExampleClient_Complete() {
	c := connectListServer()
	defer c.Close()
	res, err := c.Complete(context.Background(), conduit.CompleteParams{
		Ref:      conduit.PromptRef("greet"),
		Argument: conduit.CompleteArgument{Name: "name", Value: "A"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Completion.Values, *res.Completion.Total, res.Completion.HasMore)
	// Output: [Ada Alan] 7 true
}

// Iterating over the tools: each page is asked for when the loop reaches
// it, and breaking out asks for no more.
func ExampleClient_Tools() {
	c := connectListServer()
	defer c.Close()
	for tool, err := range c.Tools(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(tool.Name)
	}
	// Output:
	// add
	// echo
	// sleep
}

// One page at a time, with the cursor the server gave.
func ExampleClient_ListToolsPage() {
	c := connectListServer()
	defer c.Close()
	ctx := context.Background()
	for cursor := ""; ; {
		page, err := c.ListToolsPage(ctx, cursor)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(len(page.Items), "tools, next cursor:", page.NextCursor)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	// Output:
	// 2 tools, next cursor: page-2
	// 1 tools, next cursor:
}

// _meta of your own on a request, beside the progress token; the result
// keeps the server's _meta.
func ExampleWithMeta() {
	c := connectListServer()
	defer c.Close()
	res, err := c.GetPrompt(context.Background(), "greet", nil,
		conduit.WithMeta(map[string]any{"com.example/trace": "t-42"}), conduit.WithProgressToken("p-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Description)
	fmt.Println(string(res.Meta))
	// Output:
	// got _meta {"com.example/trace":"t-42","progressToken":"p-1"}
	// {"cost":3}
}

// The tasks a 2025-11-25 server holds (tasks/list has no modern form).
func ExampleClient_ListTasks() {
	c := connectListServer()
	defer c.Close()
	tasks, err := c.ListTasks(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tasks {
		fmt.Println(t.TaskID, t.Status, *t.TTLMs, *t.PollIntervalMs)
	}
	// Output: t-1 working 60000 1000
}
