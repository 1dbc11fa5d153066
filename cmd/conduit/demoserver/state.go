package demoserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// requestState: "demo1." payload "." HMAC-SHA256(payload), both base64url.
// It carries the answers of earlier rounds and is bound to the tool; the
// server trusts it only when the seal holds: the client must send it back
// unchanged, and a server may not trust what a client could have edited.
type sealedState struct {
	Tool    string                     `json:"tool"`
	Answers map[string]json.RawMessage `json:"answers"`
}

func (s *serverConn) seal(tool string, answers map[string]json.RawMessage) (string, error) {
	payload, err := json.Marshal(sealedState{Tool: tool, Answers: answers})
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, s.srv.key)
	mac.Write(payload)
	enc := base64.RawURLEncoding
	return "demo1." + enc.EncodeToString(payload) + "." + enc.EncodeToString(mac.Sum(nil)), nil
}

func (s *serverConn) open(tool, state string) (map[string]json.RawMessage, error) {
	parts := strings.Split(state, ".")
	if len(parts) != 3 || parts[0] != "demo1" {
		return nil, errors.New("is not this server's")
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(parts[1])
	sum, err2 := enc.DecodeString(parts[2])
	mac := hmac.New(sha256.New, s.srv.key)
	mac.Write(payload)
	if err1 != nil || err2 != nil || !hmac.Equal(sum, mac.Sum(nil)) {
		return nil, errors.New("failed its integrity check")
	}
	var st sealedState
	if err := json.Unmarshal(payload, &st); err != nil || st.Tool != tool {
		return nil, errors.New("belongs to another tool")
	}
	if st.Answers == nil {
		st.Answers = map[string]json.RawMessage{}
	}
	return st.Answers, nil
}
