package era

import "encoding/json"

// AsksForInput reports whether a legacy result asks for input: a member
// inputRequests that is not null, as json.Unmarshal reads it. A go-sdk
// server answers a legacy client so when its handler asks for a second
// round (its reinvocation after the server→client requests of the first
// asks again): the result has no resultType, only inputRequests and
// requestState. raw must be valid JSON, as for ResultType.
func AsksForInput(raw json.RawMessage) bool {
	asks := false
	scanned := scanObject(raw, func(key, v []byte) bool {
		if equalFoldASCII(key, "inputRequests") {
			asks = !isNull(v) // the last one decides, as for Unmarshal
		}
		return true
	})
	if scanned {
		return asks
	}
	var r struct {
		InputRequests json.RawMessage `json:"inputRequests"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return false
	}
	return len(r.InputRequests) > 0 && !isNull(r.InputRequests)
}
