package sanitize

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLogger is the rune limit for a log entry's logger name, which is a short
// label rather than content.
const MaxLogger = 256

// Entry is a sanitised notifications/message log entry, holding only the
// fields a user should see. Level is always one of the names Level accepts,
// Logger and every string in Data have been through Text, and Data is what
// Value returns, so an Entry can be printed or re-encoded as it is.
type Entry struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// Log decodes raw, the params of a notifications/message notification, and
// returns it sanitised. Only level, logger and data are kept (matched
// exactly; other fields are dropped so a server cannot slip anything else
// through). level goes through Level, and a missing or non-string level is
// "info". logger goes through Text(logger, MaxLogger); a missing or
// non-string logger is dropped. data goes through Value after decoding with
// json.Decoder.UseNumber, so big integers keep their digits; missing data is
// nil.
//
// raw may be any JSON value: one that is not an object has no fields to keep
// and yields Entry{Level: "info"}. Log returns an error only if raw is not
// exactly one well-formed JSON value (this includes nesting beyond
// encoding/json's own limit of 10000 levels).
func Log(raw []byte) (Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Entry{}, fmt.Errorf("sanitize: decoding log message params: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Entry{}, errors.New("sanitize: decoding log message params: data after the JSON value")
	}
	e := Entry{Level: "info"}
	params, ok := v.(map[string]any)
	if !ok {
		return e, nil
	}
	if level, ok := params["level"].(string); ok {
		e.Level = Level(level)
	}
	if logger, ok := params["logger"].(string); ok {
		e.Logger = Text(logger, MaxLogger)
	}
	e.Data = Value(params["data"])
	return e, nil
}
