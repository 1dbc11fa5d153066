package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// MaxIssuedElicitations bounds the URL elicitations a connection
// remembers, awaiting their notifications/elicitation/complete: past it
// the oldest is forgotten, and its completion is then dropped as unknown.
const MaxIssuedElicitations = 1000

// issuedElicitations are the URL elicitations a server asked for (by
// elicitation/create or in a -32042 error) and has not completed, by id, in
// the order issued. They are kept only when Handlers.ElicitationComplete
// is set: without it nothing is remembered.
type issuedElicitations struct {
	mu    sync.Mutex
	byID  map[string]*messages.ElicitationRequest
	order []string // ids in the order issued; may hold ids completed since
}

// issue remembers r, a URL elicitation with an id.
func (s *issuedElicitations) issue(r *messages.ElicitationRequest) {
	id := r.Params.ElicitationID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*messages.ElicitationRequest{}
	}
	if _, again := s.byID[id]; !again {
		s.order = append(s.order, id)
	}
	s.byID[id] = r
	for len(s.byID) > MaxIssuedElicitations || len(s.order) > 2*MaxIssuedElicitations {
		oldest := s.order[0]
		s.order = s.order[1:]
		delete(s.byID, oldest) // a completed id is already gone: the loop goes on
	}
}

// complete forgets the elicitation id and returns it, or false when it
// was never issued, forgotten or already completed.
func (s *issuedElicitations) complete(id string) (*messages.ElicitationRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[id]
	delete(s.byID, id)
	return r, ok
}

// issueURL remembers req when it is a URL elicitation with an id and a
// hook listens for its completion.
func (s *shared) issueURL(req any) {
	r, ok := req.(*messages.ElicitationRequest)
	if ok && s.handlers().ElicitationComplete != nil && r.Mode == messages.ModeURL && r.Params.ElicitationID != "" {
		s.active().elicitations.issue(r)
	}
}

// decodeElicitationComplete reads notifications/elicitation/complete's
// elicitationId.
func decodeElicitationComplete(raw json.RawMessage) (string, error) {
	var p struct {
		ID *string `json:"elicitationId"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("notifications/elicitation/complete: %w", err)
	}
	if p.ID == nil {
		return "", errors.New("notifications/elicitation/complete: no elicitationId")
	}
	return *p.ID, nil
}

// URLElicitations reads the data of a -32042 error (URLElicitationRequired,
// 2025-11-25): each entry of data.elicitations through the URL guard of
// elicitation/create (guards.Pipeline.URLElicitation). It returns those
// that pass, remembered for their completion like an elicitation/create's,
// and why each other one was refused (counted in Stats.Refused). rc is the
// context the requests carry (the call's).
func (rt *Runtime) URLElicitations(data json.RawMessage, rc messages.RequestContext) *messages.URLElicitationRequiredError {
	out := &messages.URLElicitationRequiredError{}
	var d struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Elicitations == nil {
		rt.m.sh.count().refused.Add(1)
		out.Refused = append(out.Refused, errors.New("data.elicitations is not a list of URL elicitations"))
		return out
	}
	version := rt.Version()
	for i, raw := range d.Elicitations {
		req, refusal := rt.cfg.Guards.URLElicitation(&guards.Input{Method: messages.MethodElicit, Params: raw, Context: rc, Version: version, Origin: rt.cfg.Origin})
		if refusal != nil {
			rt.m.sh.count().refused.Add(1)
			out.Refused = append(out.Refused, fmt.Errorf("elicitation %d: %w", i, refusal.Err))
			continue
		}
		rt.m.sh.issueURL(req)
		out.Elicitations = append(out.Elicitations, req)
	}
	return out
}
