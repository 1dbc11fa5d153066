package messages

import (
	"reflect"
	"time"
)

// Stats is a snapshot of a client's counters. Nothing is dropped silently:
// every drop is counted here.
type Stats struct {
	// ServerRequests counts input requests the server sent (legacy).
	ServerRequests int64
	// Busy counts server requests refused with -32000 because
	// MaxServerRequests were already running.
	Busy int64
	// RateLimited counts input requests refused over the server's input
	// budget (Options.InputRateLimit and InputBurst): sampling with
	// Options.Sampling's rejection code (-1 by default), elicitation and
	// roots with -32000 (legacy); a modern call fails with KindRefused.
	// Audited with outcome rate_limited.
	RateLimited int64
	// Refused counts input requests refused by a rule of the client's
	// other than the budget: a guard's (package guards: params that break
	// the specification or a bound, a URL verdict, sampling with no call in
	// flight, an answer that does not fit its request), a capability the
	// client did not declare, or a request the era or the handshake does
	// not allow; and the entries of a -32042 error (URLElicitationRequired)
	// that the URL guard refused. Busy, RateLimited and a handler's own
	// errors are not in it (all are audited refused but the first two).
	Refused int64
	// AbandonedHandlers is how many callbacks that ignored their context
	// are still running after Conduit stopped waiting for them (a gauge):
	// input handlers whose request ended (timeout, cancellation, close)
	// and a notification or log callback still running at close.
	AbandonedHandlers int64
	// NotificationsDropped counts notifications and log entries dropped
	// because 1000 were already waiting, or their bytes and the entry's
	// would pass Options.MaxWaitingNotificationBytes (16 MiB).
	NotificationsDropped int64
	// NotificationsDiscarded counts notifications and log entries still
	// waiting for their callback when the client closed.
	NotificationsDiscarded int64
	// LogsDropped counts server log entries over the log rate limit.
	LogsDropped int64
	// Malformed counts messages from the server that were not valid
	// JSON-RPC (answered -32700/-32600, or dropped when undecodable), and
	// log entries and progress notifications dropped because their params
	// could not be read.
	Malformed int64
	// UnknownResponses counts responses to ids with no call in flight
	// (late answers after a timeout, or a confused server), and
	// completions (notifications/elicitation/complete, with
	// Handlers.ElicitationComplete set) of a URL elicitation never issued,
	// forgotten or completed already.
	UnknownResponses int64
	// NotificationHandlerPanics counts notification/log callbacks that
	// panicked (logged and skipped).
	NotificationHandlerPanics int64
	// RootsWithheld counts roots a RootsLister returned that were not sent
	// to the server: not file://, not on the local host, or unparsable.
	RootsWithheld int64
	// WriteQueueOverflows counts connections closed because the server
	// stopped reading its input: the messages queued for it passed
	// Options.MaxWriteQueueBytes (*WriteQueueOverflowError).
	WriteQueueOverflows int64
	// Unsubscribed counts change notifications (list changed, resource
	// updated) and listen acknowledgements a modern server sent outside
	// what the client's subscriptions/listen stream asked and the server
	// acknowledged: a kind or resource not acknowledged, a missing or
	// wrong subscriptionId, or no stream at all. The server must not send
	// them; they are dropped.
	Unsubscribed int64
	// CacheHits counts list calls answered from the cache: a modern
	// server's list result kept for its ttlMs, until a list change of
	// its kind.
	CacheHits int64
	// RoundsCapped counts calls failed at the cap on their input rounds
	// (Options.MaxRounds): a server still asking for input, in a modern
	// call's input_required results, a modern task's input_required
	// statuses, or a legacy call's results that carry inputRequests.
	RoundsCapped int64
}

// AssignSession is the assign (WithAssigns) that names, as a string, the
// session a call is made for: a gateway's downstream session. The audit
// records of the call's input requests carry it (AuditRecord.Session).
const AssignSession = "conduit.session"

// SessionOf is the session the assigns name (AssignSession), or "".
func SessionOf(assigns map[string]any) string {
	s, _ := assigns[AssignSession].(string)
	return s
}

// AuditRecord describes one input request after the guards, with its
// outcome: answered, refused, timeout, cancelled, busy or rate_limited.
type AuditRecord struct {
	Time     time.Time `json:"time"`
	ServerID string    `json:"server_id,omitempty"`
	// Session is the session the related call was made for, when its
	// assigns name one (AssignSession): a gateway's downstream session.
	Session          string `json:"session,omitempty"`
	Era              Era    `json:"era"`
	Method           string `json:"method"`
	RequestID        ID     `json:"request_id,omitzero"`
	RelatedRequestID ID     `json:"related_request_id,omitzero"`
	// Key is the input request's key (modern).
	Key string `json:"key,omitempty"`
	// Request is the request as the handler saw it after the guards
	// (params, and for elicitation the URL verdict), or nil when it was
	// refused before the guards could decode it.
	Request any    `json:"request,omitempty"`
	Outcome string `json:"outcome"`
	// Code and Message are the JSON-RPC error sent, when one was.
	Code    *int   `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Result is the result sent, when one was.
	Result any `json:"result,omitempty"`
}

// Add returns the sum of two snapshots, field by field: the counters of
// several clients (or sessions) together. Every field of Stats is an int64
// counter, so the sum runs over the fields themselves and cannot forget one
// added later.
func (s Stats) Add(o Stats) Stats {
	vs, vo := reflect.ValueOf(&s).Elem(), reflect.ValueOf(o)
	for i := range vs.NumField() {
		vs.Field(i).SetInt(vs.Field(i).Int() + vo.Field(i).Int())
	}
	return s
}
