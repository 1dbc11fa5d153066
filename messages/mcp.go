package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Protocol versions.
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

// Era is the protocol era a connection speaks.
type Era string

// The two eras.
const (
	EraLegacy Era = "legacy" // 2024-11-05 to 2025-11-25: the server sends requests
	EraModern Era = "modern" // 2026-07-28: input requests arrive inside results (MRTR)
)

// Method names the client sends or answers.
const (
	MethodInitialize          = "initialize"
	MethodInitialized         = "notifications/initialized"
	MethodPing                = "ping"
	MethodCancelled           = "notifications/cancelled"
	MethodProgress            = "notifications/progress"
	MethodLog                 = "notifications/message"
	MethodSetLevel            = "logging/setLevel"
	MethodCreateMessage       = "sampling/createMessage"
	MethodElicit              = "elicitation/create"
	MethodListRoots           = "roots/list"
	MethodRootsListChanged    = "notifications/roots/list_changed"
	MethodElicitationComplete = "notifications/elicitation/complete"
	MethodListTools           = "tools/list"
	MethodCallTool            = "tools/call"
	MethodListResources       = "resources/list"
	MethodReadResource        = "resources/read"
	MethodListPrompts         = "prompts/list"
	MethodGetPrompt           = "prompts/get"
	MethodDiscover            = "server/discover"
	MethodListTemplates       = "resources/templates/list"
	MethodComplete            = "completion/complete"
	// Tasks: tasks/get, tasks/cancel in both eras; tasks/update (modern);
	// tasks/result and notifications/tasks/status (2025-11-25).
	MethodGetTask    = "tasks/get"
	MethodUpdateTask = "tasks/update"
	MethodCancelTask = "tasks/cancel"
	MethodTaskResult = "tasks/result"
	MethodTaskStatus = "notifications/tasks/status"
	// MethodListTasks is 2025-11-25 only: the modern tasks extension has none.
	MethodListTasks = "tasks/list"
)

// Implementation names a client or server.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// InitializeParams are the params of a legacy initialize request.
type InitializeParams struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ClientInfo      Implementation `json:"clientInfo"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
}

// CancelledParams are the params of notifications/cancelled.
type CancelledParams struct {
	RequestID ID     `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// SetLevelParams are the params of logging/setLevel.
type SetLevelParams struct {
	Level string `json:"level"`
}

// ContentBlock is one content item: text, image, audio, resource link,
// embedded resource, tool_use or tool_result. Fields of other types are empty.
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID         string          `json:"toolUseId,omitempty"`
	Content           json.RawMessage `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           *bool           `json:"isError,omitempty"`
	// resource
	Resource    json.RawMessage `json:"resource,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Contents is a sampling message's content: one block (every revision) or an
// array of blocks (2025-11-25 and later). It marshals back in the shape it
// was given, so a single block stays a single object for 2025-06-18 servers.
type Contents struct {
	Blocks []ContentBlock
	// Array is true when the content is (or must be sent as) a JSON array.
	Array bool
}

// Text returns a single text block.
func Text(s string) Contents { return Contents{Blocks: []ContentBlock{{Type: "text", Text: s}}} }

// PlainText is the text of c's text blocks joined by spaces ("" when it
// has none): what a host shows of a completion, or logs of a prompt.
func (c Contents) PlainText() string {
	var parts []string
	for _, b := range c.Blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, " ")
}

// MarshalJSON writes one object, or an array when Array is set or there is
// not exactly one block.
func (c Contents) MarshalJSON() ([]byte, error) { return c.appendJSON(nil) }

// UnmarshalJSON accepts one object or an array of objects.
func (c *Contents) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		c.Array = true
		return json.Unmarshal(data, &c.Blocks)
	}
	if len(data) > 0 && data[0] == '{' {
		var b ContentBlock
		if err := json.Unmarshal(data, &b); err != nil {
			return err
		}
		c.Blocks, c.Array = []ContentBlock{b}, false
		return nil
	}
	return errors.New("content must be an object or an array")
}

// SamplingMessage is one turn of a sampling conversation.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content Contents        `json:"content"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         json.RawMessage   `json:"metadata,omitempty"`
	Tools            json.RawMessage   `json:"tools,omitempty"`
	ToolChoice       json.RawMessage   `json:"toolChoice,omitempty"`
	Task             json.RawMessage   `json:"task,omitempty"`
	Meta             json.RawMessage   `json:"_meta,omitempty"`
}

// CreateMessageResult is the answer to a sampling request.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    Contents        `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// ElicitParams are the params of elicitation/create (form or URL mode).
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	Task            json.RawMessage `json:"task,omitempty"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
}

// Elicitation actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Elicitation modes.
const (
	ModeForm = "form"
	ModeURL  = "url"
)

// ElicitResult is the answer to an elicitation. Declining is a result.
type ElicitResult struct {
	Action  string          `json:"action"`
	Content map[string]any  `json:"content,omitempty"`
	Meta    json.RawMessage `json:"_meta,omitempty"`
}

// Root is one workspace root offered to the server.
type Root struct {
	URI  string          `json:"uri"`
	Name string          `json:"name,omitempty"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ListRootsResult is the answer to roots/list.
type ListRootsResult struct {
	Roots []Root          `json:"roots"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
}

// Tool is one tool a server offers.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Execution says how the tool may be called (2025-11-25).
	Execution *ToolExecution  `json:"execution,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// ToolExecution is a tool's execution properties (2025-11-25).
type ToolExecution struct {
	// TaskSupport is "forbidden" (the default when absent), "optional" or
	// "required": whether tools/call may, or must, run the tool as a task.
	TaskSupport string `json:"taskSupport,omitempty"`
}

// Task support of a tool (ToolExecution.TaskSupport).
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// ListParams are the params of the paginated list methods.
type ListParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ListToolsResult is the answer to tools/list.
type ListToolsResult struct {
	Tools      []Tool          `json:"tools"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// CallToolResult is the answer to tools/call.
type CallToolResult struct {
	Content           []ContentBlock  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
	// Task is set when the server answered with a task instead (modern,
	// tasks extension): await it with Client.AwaitTask.
	Task *Task `json:"-"`
}

// Resource is one resource a server offers.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	// Meta is the resource's _meta, as the server sent it.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ListResourcesResult is the answer to resources/list.
type ListResourcesResult struct {
	Resources  []Resource      `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// ResourceTemplate is one URI template (RFC 6570) a server offers
// resources under (resources/templates/list).
type ResourceTemplate struct {
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ListResourceTemplatesResult is the answer to resources/templates/list.
type ListResourceTemplatesResult struct {
	ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string             `json:"nextCursor,omitempty"`
	Meta              json.RawMessage    `json:"_meta,omitempty"`
}

// ReadResourceParams are the params of resources/read.
type ReadResourceParams struct {
	URI  string          `json:"uri"`
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ResourceContents is one item of a resources/read answer.
type ResourceContents struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	// Meta is the item's _meta, as the server sent it.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ReadResourceResult is the answer to resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
}

// PromptArgument describes one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one prompt a server offers.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	// Meta is the prompt's _meta, as the server sent it.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ListPromptsResult is the answer to prompts/list.
type ListPromptsResult struct {
	Prompts    []Prompt        `json:"prompts"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	Meta      json.RawMessage   `json:"_meta,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string       `json:"role"`
	Content ContentBlock `json:"content"`
}

// GetPromptResult is the answer to prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Completion reference types (CompleteReference.Type).
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteReference names what an argument belongs to: a prompt by Name
// (Type RefPrompt) or a resource template by URI (Type RefResource).
type CompleteReference struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and what was typed.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries the values of arguments already resolved.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitempty"`
	Meta     json.RawMessage   `json:"_meta,omitempty"`
}

// Completion is the server's suggestions for one argument: at most 100
// Values, the Total it has when known, and whether it has more.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// CompleteResult is the answer to completion/complete.
type CompleteResult struct {
	Completion Completion      `json:"completion"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// LoggingMessage is a sanitised server log entry (notifications/message):
// only level, logger and data are kept.
type LoggingMessage struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// Progress is a server's notifications/progress, decoded for
// Handlers.Progress.
type Progress struct {
	// Token is the progressToken of the request it reports on (the one
	// given to WithProgressToken): a string, or an int64 for an integer
	// (a float64 for any other number).
	Token any
	// Progress is how far along it is; it grows with each notification.
	Progress float64
	// Total is the amount Progress reaches at the end, nil when the server
	// does not know it.
	Total *float64
	// Message is the server's description of the step, sanitised (as the
	// strings of a log entry are, cut to 4 096 characters); "" when none.
	Message string
}

// Notification is a server notification other than a log entry.
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Task statuses (2026-07-28 tasks extension).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Task is a server task (the tasks extension): what a tools/call returns
// with resultType "task", and what tasks/get reports.
type Task struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt,omitempty"`
	LastUpdatedAt  string `json:"lastUpdatedAt,omitempty"`
	TTLMs          *int64 `json:"ttlMs,omitempty"`
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`
}

// ListTasksResult is the answer to tasks/list (2025-11-25).
type ListTasksResult struct {
	Tasks      []Task          `json:"tasks"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// DetailedTask is a tasks/get answer: the task and, by status, its input
// requests, result or error.
type DetailedTask struct {
	Task
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *RPCError                  `json:"error,omitempty"`
}
