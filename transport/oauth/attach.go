package oauth

import (
	"github.com/conduitmcp/conduit/transport"
)

// Attach makes h sign in where its server asks: h.Client becomes an
// authorizing client for h.URL that uses and refreshes the tokens in
// cfg.Store, and, with no cfg.CodeFetcher, fails a needed sign-in at once with
// ErrSignInNeeded (a host, a gateway, a command without a person). h keeps
// a Client it already has; an invalid URL is left to h.Connect to report.
func Attach(h *transport.HTTP, cfg Config) {
	if h.Client != nil {
		return
	}
	cfg.Resource = h.URL
	t, err := New(cfg)
	if err != nil {
		return
	}
	h.Client = t.Client()
}
