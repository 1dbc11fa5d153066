package oauth

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// boundedClient is the client for the authorization servers: each exchange
// within timeout, each body within maxBytes, at most 5 redirects, and no
// plain http except to loopback or to the resource's own origin (its
// protected resource metadata).
func boundedClient(base http.RoundTripper, timeout time.Duration, maxBytes int64, resourceOrigin string) *http.Client {
	rt := boundedTransport{base: base, max: maxBytes, resourceOrigin: resourceOrigin}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= defaultRedirectLimit {
			return fmt.Errorf("stopped after %d redirects (from %s)", len(via), via[0].URL.Redacted())
		}
		return nil
	}}
}

type boundedTransport struct {
	base           http.RoundTripper
	max            int64
	resourceOrigin string
}

// ErrInsecureAuthServer refuses an http authorization server that is not
// on loopback.
var ErrInsecureAuthServer = errors.New("an authorization server over plain http is refused (only https, or http on loopback)")

func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !loopback(req.URL) && origin(req.URL) != b.resourceOrigin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%s: %w", req.URL.Redacted(), ErrInsecureAuthServer)
	}
	resp, err := b.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: b.max, max: b.max, url: req.URL.Redacted()}
	return resp, nil
}

func loopback(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// limitedBody fails a read past max bytes.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	url  string
}

// BodyTooLargeError is an authorization server's response over
// Config.MaxBodyBytes.
type BodyTooLargeError struct {
	URL   string
	Limit int64
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("oauth: the response of %s is over %d bytes (Config.MaxBodyBytes)", e.URL, e.Limit)
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a body of exactly max from a longer one.
		var one [1]byte
		if n, _ := l.rc.Read(one[:]); n > 0 {
			return 0, &BodyTooLargeError{URL: l.url, Limit: l.max}
		}
		return l.rc.Read(p)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
