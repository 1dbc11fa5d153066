package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Loopback receives one authorization response on a loopback redirect URI
// (127.0.0.1, a port of its own, one exact path), for a person signing in
// in a browser.
type Loopback struct {
	ln   net.Listener
	path string
}

// NewLoopback listens on 127.0.0.1 at a random port.
func NewLoopback() (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauth: no loopback listener for the redirect: %w", err)
	}
	return &Loopback{ln: ln, path: "/callback"}, nil
}

// RedirectURL is the redirect URI to register and send.
func (l *Loopback) RedirectURL() string { return "http://" + l.ln.Addr().String() + l.path }

// Close stops listening (Fetcher does once it has its one request).
func (l *Loopback) Close() error { return l.ln.Close() }

// Fetcher shows the authorization URL (show opens a browser or prints it)
// and waits for the one request on the redirect path: its code, state and
// iss are the answer (go-sdk checks state); the page says the sign-in is
// done and can be closed. Any other path is a 404 and does not count.
func (l *Loopback) Fetcher(show func(url string)) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		type answer struct {
			r   *auth.AuthorizationResult
			err error
		}
		got := make(chan answer, 1)
		var once sync.Once
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != l.path || r.Method != http.MethodGet {
				http.NotFound(w, r)
				return
			}
			taken := false
			once.Do(func() {
				taken = true
				res, err := ReadRedirect(r.URL.String())
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				if err != nil {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, page("Sign-in failed", "Conduit could not read the answer of the authorization server. Go back to the terminal for the details; you can close this page."))
				} else {
					fmt.Fprint(w, page("Signed in", "Conduit has what it needs: the sign-in is done, and you can close this page."))
				}
				got <- answer{res, err}
			})
			if !taken {
				http.Error(w, "this sign-in is already over", http.StatusGone)
			}
		})}
		go func() { _ = srv.Serve(l.ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		show(args.URL)
		select {
		case a := <-got:
			return a.r, a.err
		case <-ctx.Done():
			return nil, errors.Join(errors.New("oauth: no answer on the loopback redirect"), context.Cause(ctx))
		}
	}
}

func page(title, text string) string {
	return "<!doctype html><html><head><meta charset=\"utf-8\"><title>" + title + " · Conduit</title></head>" +
		"<body style=\"font-family:sans-serif;margin:4em\"><h1>" + title + "</h1><p>" + text + "</p></body></html>"
}
