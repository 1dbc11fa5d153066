package guards

import (
	"slices"

	"github.com/conduitmcp/conduit/messages"
)

// beforeElicitation applies the elicitation rules: the mode (absent = form)
// must be one the handler declared and the revision defines; a URL must pass
// CheckURL; a form schema must be the revision's flat primitive subset.
func (p *Pipeline) beforeElicitation(in *Input) (any, *Refusal) {
	e, r := decodeElicit(in.Params, in.ParamsValid)
	if r != nil {
		return nil, r
	}
	params := e.ElicitParams
	mode := params.Mode
	if e.mode && mode == "" {
		return nil, invalidParams("elicitation mode must be \"form\" or \"url\"")
	}
	if mode == "" {
		mode = messages.ModeForm
	}
	if mode != messages.ModeForm && mode != messages.ModeURL {
		return nil, invalidParams("unknown elicitation mode %q", mode)
	}
	if mode == messages.ModeURL && olderThan(in.Version, messages.Version20251125) {
		return nil, invalidParams("elicitation mode \"url\" does not exist in protocol version %s", in.Version)
	}
	if !slices.Contains(p.cfg.Elicitation.Modes, mode) {
		return nil, invalidParams("elicitation mode %q is not supported by this client", mode)
	}
	req := &messages.ElicitationRequest{RequestContext: in.Context, Mode: mode, Params: params, Raw: in.Params}
	if mode == messages.ModeURL {
		if r := p.checkURL(in, req); r != nil {
			return nil, r
		}
		return req, nil
	}
	if !e.schema {
		return nil, invalidParams("form mode requires \"requestedSchema\"")
	}
	form, err := p.forms.parse(in.Version, params.RequestedSchema)
	if err != nil {
		return nil, invalidParams("requestedSchema: %v", err)
	}
	in.form = form
	req.Fields = form.Fields()
	req.Form = form.FormFields()
	return req, nil
}

// URLElicitation checks one URL elicitation a server requires before a
// call can succeed (an entry of a -32042 error's data.elicitations,
// 2025-11-25) by the rules of a URL elicitation/create: mode "url", a url
// that passes CheckURL, an elicitationId (2025-11-25). It returns the
// request with the URL's verdict (Host, IDN, OriginMismatch …). No handler
// runs for it, so nothing of the input budget is spent.
func (p *Pipeline) URLElicitation(in *Input) (*messages.ElicitationRequest, *Refusal) {
	e, r := decodeElicit(in.Params, in.ParamsValid)
	if r != nil {
		return nil, r
	}
	if e.Mode != messages.ModeURL {
		return nil, invalidParams("a required URL elicitation must have mode \"url\", got %q", e.Mode)
	}
	req := &messages.ElicitationRequest{RequestContext: in.Context, Mode: messages.ModeURL, Params: e.ElicitParams, Raw: in.Params}
	if r := p.checkURL(in, req); r != nil {
		return nil, r
	}
	return req, nil
}

// checkURL is the one check of a URL elicitation's params: a url that
// passes CheckURL, an elicitationId in 2025-11-25; it sets req's verdict.
func (p *Pipeline) checkURL(in *Input, req *messages.ElicitationRequest) *Refusal {
	params := req.Params
	if params.URL == "" {
		return invalidParams("url mode requires \"url\"")
	}
	if in.Version == messages.Version20251125 && params.ElicitationID == "" {
		return invalidParams("url mode requires \"elicitationId\"")
	}
	info, err := CheckURL(params.URL)
	if err != nil {
		return invalidParams("%v", err)
	}
	req.URL, req.Host, req.IDN, req.WrittenHost, req.HostMapped = info.URL, info.Host, info.IDN, info.WrittenHost, info.HostMapped
	o := in.Origin
	if o == "" {
		o = p.cfg.Elicitation.Origin
	}
	req.OriginMismatch = !info.SameOrigin(o)
	return nil
}

// afterElicitation checks the answer: a known action; a form accept is
// completed with the schema's defaults and must fit the schema; a URL
// accept carries no content; decline and cancel carry none (dropped).
func (p *Pipeline) afterElicitation(in *Input, req any, r *messages.ElicitResult) (any, *Refusal) {
	if r == nil {
		return nil, internalError("elicitation handler returned no result")
	}
	out := *r
	switch r.Action {
	case messages.ActionDecline, messages.ActionCancel:
		out.Content = nil
		return &out, nil
	case messages.ActionAccept:
	default:
		return nil, internalError("elicitation action must be \"accept\", \"decline\" or \"cancel\", got %q", r.Action)
	}
	er, _ := req.(*messages.ElicitationRequest)
	mode := messages.ModeForm
	if er != nil && er.Mode != "" {
		mode = er.Mode
	}
	if mode == messages.ModeURL {
		if len(r.Content) > 0 {
			return nil, internalError("a url-mode accept carries no content")
		}
		out.Content = nil
		return &out, nil
	}
	form := in.form
	if form == nil {
		if er == nil {
			return nil, internalError("elicitation answer without its request")
		}
		var err error
		form, err = p.forms.parse(in.Version, er.Params.RequestedSchema)
		if err != nil {
			return nil, internalError("requestedSchema: %v", err)
		}
		in.form = form
	}
	content, err := form.Complete(r.Content)
	if err != nil {
		ref := internalError("elicitation answer does not fit the schema: %v", err)
		ref.Err.Cause = err
		return nil, ref
	}
	out.Content = content
	return &out, nil
}
