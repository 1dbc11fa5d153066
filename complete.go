package conduit

import (
	"context"

	"github.com/conduitmcp/conduit/messages"
)

// PromptRef refers Complete to the prompt called name.
func PromptRef(name string) CompleteReference {
	return CompleteReference{Type: RefPrompt, Name: name}
}

// ResourceRef refers Complete to the resource template uriTemplate (as
// ListResourceTemplates gives it).
func ResourceRef(uriTemplate string) CompleteReference {
	return CompleteReference{Type: RefResource, URI: uriTemplate}
}

// Complete asks the server for completions of one argument
// (completion/complete): of a prompt (PromptRef) or of a resource template
// (ResourceRef), given what was typed so far (p.Argument.Value) and,
// optionally, the arguments already resolved (p.Context). Params that
// cannot be sent (a reference of another type, a prompt reference without
// a name or with a URI, a resource reference without a URI or with a name,
// an argument without a name) are refused with KindUsage before anything is sent.
func (c *Client) Complete(ctx context.Context, p CompleteParams, opts ...CallOption) (*CompleteResult, error) {
	if msg := checkComplete(p); msg != "" {
		return nil, &Error{Kind: KindUsage, Method: messages.MethodComplete, Message: msg}
	}
	var r CompleteResult
	if err := c.Call(ctx, messages.MethodComplete, p, &r, opts...); err != nil {
		return nil, err
	}
	if r.Completion.Values == nil {
		r.Completion.Values = []string{}
	}
	return &r, nil
}

// checkComplete says what makes p impossible to send, "" when nothing.
func checkComplete(p CompleteParams) string {
	switch p.Ref.Type {
	case RefPrompt:
		if p.Ref.Name == "" {
			return "a ref/prompt reference needs the prompt's name"
		}
		if p.Ref.URI != "" {
			return "a ref/prompt reference has a name, not a URI"
		}
	case RefResource:
		if p.Ref.URI == "" {
			return "a ref/resource reference needs the template's URI"
		}
		if p.Ref.Name != "" {
			return "a ref/resource reference has a URI, not a name"
		}
	default:
		return `the reference type must be "ref/prompt" or "ref/resource", not "` + clip(p.Ref.Type) + `"`
	}
	if p.Argument.Name == "" {
		return "the argument to complete needs a name"
	}
	return ""
}
