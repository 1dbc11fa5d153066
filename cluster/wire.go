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
	// To a member's relay actor (relayName), not a grain:
	typeInput    = "conduit.cluster.v1.Input"    // inputRequest → the input's result (CreateMessageResult, ElicitResult, ListRootsResult)
	typeResume   = "conduit.cluster.v1.Resume"   // resumeRequest → CallToolResult (input_required or complete)
	typeDraining = "conduit.cluster.v1.Draining" // drainingNotice → null
	typeDrained  = "conduit.cluster.v1.Drained"  // drainedNotice → null
	// To a server grain, without an answer: the CallTool of origin ended
	// on its member (its client went, or its deadline passed).
	typeCancel = "conduit.cluster.v1.Cancel" // origin
	// To a member's relay, without an answer: the downstream request of a
	// Resume it serves ended on the member that sent it.
	typeCancelResume = "conduit.cluster.v1.CancelResume" // {"id"}
	// To a member's relay, without an answer, from the member holding a
	// server: a progress notification of a call made there, and a log
	// entry of the server (to every member), each after the holding
	// member's client sanitised it (and rate-limited the entries).
	typeProgress = "conduit.cluster.v1.Progress" // progressNote
	typeLog      = "conduit.cluster.v1.Log"      // logNote

	typeResult = "conduit.cluster.v1.Result"
	typeError  = "conduit.cluster.v1.Error"
	// A grain's answer to a request that reached it after its member's
	// drain ended: it did not run, and is sent again (errNotDelivered).
	typeNotRun = "conduit.cluster.v1.NotRun"
)

// request is the JSON of every v1 request; each method reads its fields.
type request struct {
	// ID names the request among its sender's (its address, a slash, a
	// number): a draining member lists those that reached its grains
	// (drainedNotice).
	ID string `json:"id,omitempty"`
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
	// Origin is where a CallTool's input requests go: the member whose
	// gateway made the call, and the call's id there.
	Origin *origin `json:"origin,omitempty"`
	// Progress says that the call's client asked for progress: the
	// holding member asks the server and sends each notification back
	// to the origin (typeProgress).
	Progress bool `json:"progress,omitempty"`
	// Parks says that the call's client is modern: its input rounds park
	// until the client's retry, and the server's gate may cancel it once
	// another call has waited for it (docs/decisions.md #38).
	Parks bool `json:"parks,omitempty"`
	// Capabilities are what the call's client declared
	// (conduit.WithCapabilities; nil: not narrowed): the holding member
	// makes the call with them, so that a modern server's _meta, and the
	// connection a legacy server's call reaches, are the client's
	// (docs/decisions.md #78).
	Capabilities *[]string `json:"capabilities,omitempty"`
}

// progressNote is a progress notification of the call Call (an origin's
// id), already sanitised by the holding member's client.
type progressNote struct {
	Call     string   `json:"call"`
	Server   string   `json:"server"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

// logNote is a log entry of Server, already sanitised and rate-limited by
// the holding member's client.
type logNote struct {
	Server string          `json:"server"`
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// origin names a call on the member that made it.
type origin struct {
	Member string `json:"member"` // its remote address
	Call   string `json:"call"`
}

// inputRequest is an input request (sampling, elicitation, roots) of a
// server, after the holding member's guards, sent to the member whose
// gateway made the call that caused it.
type inputRequest struct {
	TimeoutMS     int64           `json:"timeoutMs,omitempty"`
	Call          string          `json:"call"`
	Method        string          `json:"method"`
	Server        string          `json:"server"`
	Era           conduit.Era     `json:"era,omitempty"`
	InputKey      string          `json:"inputKey,omitempty"`
	InputsInRound int             `json:"inputsInRound,omitempty"`
	Mode          string          `json:"mode,omitempty"` // elicitation's
	Params        json.RawMessage `json:"params,omitempty"`
	Raw           json.RawMessage `json:"raw,omitempty"`
}

// resumeRequest is a modern client's retry (tools/call params, with its
// requestState and inputResponses) sent to the member holding its call.
type resumeRequest struct {
	TimeoutMS int64           `json:"timeoutMs,omitempty"`
	ID        string          `json:"id,omitempty"` // what a CancelResume names
	Params    json.RawMessage `json:"params"`
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
	var re *conduit.RPCError
	if errors.As(err, &ce) {
		we.Kind, we.ConnectionEnded = ce.Kind, ce.ConnectionEnded
		if ce.RPC != nil {
			we.Code, we.RPCMessage, we.Data = ce.RPC.Code, ce.RPC.Message, ce.RPC.Data
		}
	} else if errors.As(err, &re) {
		we.Kind, we.Code, we.RPCMessage, we.Data = conduit.KindRPC, re.Code, re.Message, re.Data
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

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// drainingNotice says that a member drains before it leaves: until then,
// the requests in flight to it are not failed when the provider drops it.
type drainingNotice struct {
	Member  string `json:"member"`
	UntilMS int64  `json:"untilMs"` // Unix milliseconds
}

// drainedNotice says that a member's drain ended: it answers no request
// from now on. Seen lists the IDs of the receiver's requests that reached
// its grains since the drain began. A request still waiting for its answer
// that the receiver sent after the draining notice, and that is not among
// them, never ran (it was lost on the way, or in a grain that stopped), so
// it is sent again; any other fails at once.
type drainedNotice struct {
	Member string   `json:"member"`
	Seen   []string `json:"seen"`
}
