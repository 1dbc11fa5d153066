package guards

import (
	"errors"
	"net/url"
	"path"
	"strings"
	"unicode"

	"github.com/conduitmcp/conduit/messages"
)

// NormalizeRoot checks that uri is a file:// URI on the local host and
// returns it normalised: scheme "file", empty host ("localhost" is
// dropped), the path percent-decoded, its "." and ".." segments resolved
// (encoded ones like %2e%2E too) without ever going above "/", repeated
// slashes collapsed, a trailing slash kept, and the path re-encoded. It
// refuses URIs that are not file:, carry another host, userinfo or a port,
// have a query or fragment, a relative or empty path, or a backslash or
// control character in the decoded path.
func NormalizeRoot(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", errors.New("unparsable URI")
	}
	if !strings.EqualFold(u.Scheme, "file") {
		if u.Scheme == "" {
			return "", errors.New("relative URI, not file://")
		}
		return "", errors.New("scheme " + u.Scheme + " is not file")
	}
	if u.Opaque != "" {
		return "", errors.New("not an absolute file URI")
	}
	if u.User != nil {
		return "", errors.New("file URI carries userinfo")
	}
	if u.Port() != "" || strings.HasSuffix(u.Host, ":") {
		return "", errors.New("file URI carries a port")
	}
	if h := u.Hostname(); h != "" && !strings.EqualFold(h, "localhost") {
		return "", errors.New("file URI on another host")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(uri, "#") {
		return "", errors.New("file URI has a query or fragment")
	}
	p := u.Path
	if p == "" || p[0] != '/' {
		return "", errors.New("file URI path is not absolute")
	}
	for _, r := range p {
		if r == '\\' {
			return "", errors.New("file URI path contains a backslash")
		}
		if unicode.IsControl(r) {
			return "", errors.New("file URI path contains a control character")
		}
	}
	clean := path.Clean(p) // resolves . and .., never above "/"
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return (&url.URL{Scheme: "file", Path: clean}).String(), nil
}

// afterRoots keeps the roots NormalizeRoot accepts (normalised, names as
// they are) and drops the others, counting and logging each.
func (p *Pipeline) afterRoots(in *Input, r *messages.ListRootsResult) (any, *Refusal) {
	if r == nil {
		return nil, internalError("roots handler returned no result")
	}
	out := &messages.ListRootsResult{Roots: make([]messages.Root, 0, len(r.Roots)), Meta: r.Meta}
	for _, root := range r.Roots {
		uri, err := NormalizeRoot(root.URI)
		if err != nil {
			p.withheld.Add(1)
			p.cfg.Logger.Warn("guards: root withheld from server",
				"server_id", in.Context.ServerID, "uri", root.URI, "reason", err.Error())
			continue
		}
		root.URI = uri
		out.Roots = append(out.Roots, root)
	}
	return out, nil
}
