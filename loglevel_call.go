package conduit

import (
	"fmt"

	"github.com/conduitmcp/conduit/sanitize"
)

// WithLogLevel asks the server for the log entries of this one call at
// level and above, in the modern era: the call's _meta
// io.modelcontextprotocol/logLevel (every round's) carries level instead of
// the client's (SetLogLevel); "" asks for none. It is for a client that
// calls on behalf of another, as a gateway does for a downstream request
// that carried its own level. The entries reach the log hook as any
// others. A level that is not an RFC 5424 name (debug … emergency) fails
// the call with KindUsage before anything is sent. In the legacy era the
// level is the session's (SetLogLevel) and the option changes nothing.
func WithLogLevel(level string) CallOption {
	return func(o *callOptions) {
		if level != "" && sanitize.Level(level) != level && o.usage == nil {
			o.usage = fmt.Errorf("WithLogLevel: unknown log level %q: want one of debug, info, notice, warning, error, critical, alert, emergency", level)
		}
		o.logLevel = &level
	}
}
