package cluster

import (
	"encoding/json"
	"errors"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// What crosses members. Every request to a server grain is a protoactor
// cluster.GrainRequest (a protobuf message the remote's default serializer
// carries) whose MessageTypeName is one of the versioned names below and
// whose MessageData is the request's JSON; every answer is a
// cluster.GrainResponse named typeResult (the method's result, as MCP JSON)
// or typeError. A new field may be added to a v1 message (readers ignore
// what they do not know); any other change is a v2 name.
const (
	typeTools             = "conduit.cluster.v1.Tools"             // {} → toolsReply
	typeCallTool          = "conduit.cluster.v1.CallTool"          // tool, arguments → CallToolResult
	typeGetPrompt         = "conduit.cluster.v1.GetPrompt"         // name, promptArguments → GetPromptResult
	typeReadResource      = "conduit.cluster.v1.ReadResource"      // uri → ReadResourceResult
	typePrompts           = "conduit.cluster.v1.Prompts"           // {} → []host.Prompt
	typeResources         = "conduit.cluster.v1.Resources"         // {} → []host.Resource
	typeResourceTemplates = "conduit.cluster.v1.ResourceTemplates" // {} → []host.ResourceTemplate
	typeComplete          = "conduit.cluster.v1.Complete"          // complete → CompleteResult
	typeSubscribe         = "conduit.cluster.v1.Subscribe"         // uri → null
	typeUnsubscribe       = "conduit.cluster.v1.Unsubscribe"       // uri → null
	typeSetLogLevel       = "conduit.cluster.v1.SetLogLevel"       // level → null
	typeResult            = "conduit.cluster.v1.Result"
	typeError             = "conduit.cluster.v1.Error"
)

// request is the JSON of every v1 request; each method reads its fields.
type request struct {
	// TimeoutMS is what is left of the caller's deadline: the holding
	// member's call ends with it.
	TimeoutMS       int64                   `json:"timeoutMs,omitempty"`
	Tool            string                  `json:"tool,omitempty"`
	Arguments       json.RawMessage         `json:"arguments,omitempty"`
	Name            string                  `json:"name,omitempty"`
	PromptArguments map[string]string       `json:"promptArguments,omitempty"`
	URI             string                  `json:"uri,omitempty"`
	Complete        *conduit.CompleteParams `json:"complete,omitempty"`
	Level           string                  `json:"level,omitempty"`
}

// wireError is a failed request's error: a conduit.Error's kind, message
// and JSON-RPC error, or the text of any other.
type wireError struct {
	Kind            conduit.Kind    `json:"kind,omitempty"`
	Message         string          `json:"message"`
	Code            int             `json:"code,omitempty"`
	RPCMessage      string          `json:"rpcMessage,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	ConnectionEnded bool            `json:"connectionEnded,omitempty"`
}

// toolsReply is a server grain's catalog and status, asked by every
// member's keep-alive.
type toolsReply struct {
	Member string     `json:"member"` // the holding member's address
	Status wireStatus `json:"status"`
	Tools  []wireTool `json:"tools"`
}

type wireTool struct {
	Server     string          `json:"server"`
	ServerTool string          `json:"serverTool"`
	Tool       json.RawMessage `json:"tool"`
}

type wireStatus struct {
	State    host.State `json:"state"`
	Since    time.Time  `json:"since"`
	PID      int        `json:"pid,omitempty"`
	Restarts int        `json:"restarts,omitempty"`
	Attempt  int        `json:"attempt,omitempty"`
	Err      string     `json:"err,omitempty"`
	Tools    int        `json:"tools,omitempty"`
	Calls    int64      `json:"calls,omitempty"`
}

func encodeError(err error) *pcluster.GrainResponse {
	we := wireError{Message: err.Error()}
	var ce *conduit.Error
	if errors.As(err, &ce) {
		we.Kind, we.ConnectionEnded = ce.Kind, ce.ConnectionEnded
		if ce.RPC != nil {
			we.Code, we.RPCMessage, we.Data = ce.RPC.Code, ce.RPC.Message, ce.RPC.Data
		}
	}
	data, _ := json.Marshal(we)
	return &pcluster.GrainResponse{MessageTypeName: typeError, MessageData: data}
}

// decodeError rebuilds a *conduit.Error from a typeError answer: the
// gateway answers downstream with the server's own JSON-RPC error as it
// would for a local server.
func decodeError(method string, data []byte) error {
	var we wireError
	if err := json.Unmarshal(data, &we); err != nil {
		return &conduit.Error{Kind: conduit.KindProtocol, Method: method, Message: "cluster: undecodable error answer: " + err.Error()}
	}
	e := &conduit.Error{Kind: we.Kind, Method: method, Message: we.Message, ConnectionEnded: we.ConnectionEnded}
	if e.Kind == "" {
		e.Kind = conduit.KindTransport
	}
	if we.Code != 0 || we.RPCMessage != "" {
		e.RPC = &conduit.RPCError{Code: we.Code, Message: we.RPCMessage, Data: we.Data}
	}
	return e
}
