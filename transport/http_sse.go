package transport

import (
	"bytes"
	"io"
	"strconv"
	"time"
)

// maxRetry caps a server's SSE retry field, so that a huge value cannot
// overflow a time.Duration. It is not a policy: a stream that waits this
// long is still ended by Close or by the call being cancelled.
const maxRetry = 24 * time.Hour

var utf8BOM = []byte("\ufeff")

// sseParser reads a text/event-stream (the WHATWG EventSource parsing rules)
// and returns the data of each message event. It keeps the last event id
// and retry across streams (reset), which is what resuming a stream needs.
//
// It holds about the event limit at most: a line that outgrows the limit
// fails as soon as the bytes are seen, not when its end arrives, and the
// buffer grows as grow says. A big event's data is the buffer it was read
// into (detach), not a copy.
// It is used by one goroutine at a time.
type sseParser struct {
	r       io.Reader
	buf     []byte // buf[off:] is read but not yet parsed
	off     int
	err     error // the read error that ended the stream
	skipLF  bool  // the last line ended with CR: a LF right after it is part of it
	atStart bool  // nothing parsed yet: a byte order mark may come first
	max     int   // one event's bytes (field lines, without comments)
	fitted  int   // the capacity detach cut buf to, 0 if it did not

	lastID   string        // the id of the last whole event that had one ("" clears it)
	retry    time.Duration // the last valid retry field
	hasRetry bool
	progress bool // an event (or an id) was dispatched since takeProgress
}

func newSSEParser(max int) *sseParser { return &sseParser{max: max} }

// reset starts reading a new stream, keeping lastID and retry.
func (p *sseParser) reset(r io.Reader) {
	if cap(p.buf) > bigMessage {
		p.buf = nil // what a big line made resident is not kept for the next stream
	}
	p.r, p.buf, p.off, p.err, p.skipLF, p.atStart, p.fitted = r, p.buf[:0], 0, nil, false, true, 0
}

// retryOr returns the server's retry, or d if it sent none.
func (p *sseParser) retryOr(d time.Duration) time.Duration {
	if p.hasRetry {
		return p.retry
	}
	return d
}

// takeProgress reports whether the stream moved (an event or an id) since
// the last call.
func (p *sseParser) takeProgress() bool {
	moved := p.progress
	p.progress = false
	return moved
}

// next returns the data of the next message event (event type absent or
// "message") that carries a non-blank payload. Other event types (such as
// a "close" event that only carries retry), comments, and events with empty
// data (a priming event that only carries an id) are consumed silently. At
// the end of the stream it returns the read error (io.EOF); an event not
// terminated by a blank line is discarded, as the SSE rules ask, id
// included: lastID is the id of the last event received whole, so that
// resuming replays a cut event rather than skipping it. An event larger
// than max returns *MessageTooLongError.
func (p *sseParser) next() ([]byte, error) {
	for {
		event, data, err := p.nextEvent()
		if err != nil {
			return nil, err
		}
		if event == "" || event == "message" {
			return data, nil
		}
	}
}

// nextEvent returns the type ("" when absent) and data of the next event
// that carries a non-blank payload, by the rules of next: the legacy
// HTTP+SSE transport reads its endpoint event with it.
func (p *sseParser) nextEvent() (string, []byte, error) {
	var (
		data    []byte
		hasData bool
		event   string
		id      string
		hasID   bool
		size    int
	)
	for {
		line, err := p.line(p.max - size)
		if err != nil {
			return "", nil, err
		}
		if len(line) == 0 { // dispatch
			if hasID {
				p.lastID, p.progress = id, true
			}
			if hasData {
				p.progress = true
				if payload := bytes.TrimSpace(data); len(payload) > 0 {
					return event, fit(payload), nil
				}
			}
			data, hasData, event, id, hasID, size = nil, false, "", "", false, 0
			continue
		}
		if line[0] == ':' {
			continue // a comment: keep-alives are not counted against the event
		}
		size += len(line)
		// line is only valid until the next call: keep copies.
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			event = string(value)
		case "data":
			switch {
			case !hasData && len(value) >= bigMessage:
				data = p.detach(value) // no second copy of a big message
			case hasData:
				data = append(data, '\n')
				fallthrough
			default:
				data = append(data, value...)
			}
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id, hasID = string(value), true
			}
		case "retry":
			if isDigits(string(value)) {
				ms, err := strconv.ParseInt(string(value), 10, 64)
				if err != nil || ms > int64(maxRetry/time.Millisecond) {
					p.retry = maxRetry
				} else {
					p.retry = time.Duration(ms) * time.Millisecond
				}
				p.hasRetry = true
			}
		}
	}
}

// detach hands over value, the end of the line just returned, and the
// buffer it is in: the parser goes on in a buffer of its own, holding what
// it has read past the line. So a big event is held once, not in the
// buffer and again in its data. A value under a quarter of a big buffer is
// copied instead, and the buffer kept for the lines after it (keep): a
// stream of 3 MB events reuses one buffer rather than taking the limit's
// capacity for each.
//
// The buffer kept is cut to four times that value (fitted) when it is
// larger: a buffer of the limit's capacity is mostly address space, but
// the collector counts it live and lets as much garbage pile up beside it
// (GOGC), so a stream of 3 MB events held 230 MiB with a 64 MiB buffer
// kept and 145 MiB with a 12 MiB one. Any value in a fitted buffer is
// copied out, so that a larger one does not take the buffer with it and
// send the next line back to the limit's capacity: a fitted buffer only
// grows again for a line longer than itself, by four times or more each
// time, until lines fill a quarter of the limit.
func (p *sseParser) detach(value []byte) []byte {
	if cap(p.buf) > bigMessage && (len(value) < cap(p.buf)/4 || cap(p.buf) == p.fitted) {
		msg := append(make([]byte, 0, len(value)), value...)
		if fit := 4*len(value) + 4<<10; cap(p.buf) > 2*fit {
			rest := p.buf[p.off:]
			buf := make([]byte, len(rest), max(len(rest), fit))
			copy(buf, rest)
			p.buf, p.off, p.fitted = buf, 0, cap(buf)
		}
		return msg
	}
	rest := p.buf[p.off:]
	buf := make([]byte, len(rest), max(len(rest), 4<<10))
	copy(buf, rest)
	p.buf, p.off, p.fitted = buf, 0, 0
	return value
}

func (p *sseParser) tooLong() error {
	return &MessageTooLongError{What: "SSE event", Limit: p.max, Setting: "transport.HTTP.MaxEventBytes"}
}

// line returns the next line without its terminator (LF, CRLF or a lone
// CR); it is valid until the next call. A line longer than limit returns
// *MessageTooLongError as soon as that many bytes are buffered.
func (p *sseParser) line(limit int) ([]byte, error) {
	scanned := 0 // bytes of buf[off:] known to hold no line end
	for {
		if p.atStart {
			// One UTF-8 byte order mark at the start of a stream is not
			// part of it; until three bytes are in, rest may be its start.
			rest := p.buf[p.off:]
			switch {
			case bytes.HasPrefix(rest, utf8BOM):
				p.off += len(utf8BOM)
				p.atStart, scanned = false, 0
			case len(rest) >= len(utf8BOM) || p.err != nil || !bytes.HasPrefix(utf8BOM, rest):
				p.atStart = false
			}
		}
		if p.skipLF && p.off < len(p.buf) {
			if p.buf[p.off] == '\n' {
				p.off++
			}
			p.skipLF = false
		}
		rest := p.buf[p.off:]
		if i := bytes.IndexAny(rest[scanned:], "\r\n"); i >= 0 {
			i += scanned
			if i > limit {
				return nil, p.tooLong()
			}
			p.off += i + 1
			p.skipLF = rest[i] == '\r'
			return rest[:i], nil
		}
		scanned = len(rest)
		if len(rest) > limit {
			return nil, p.tooLong()
		}
		if p.err != nil {
			// The stream ended, perhaps in the middle of a line: the event
			// in progress is incomplete and is dropped.
			return nil, p.err
		}
		if p.off > 0 {
			p.buf = p.buf[:copy(p.buf, rest)]
			p.off = 0
		}
		// Room for the line, its terminator and the CR of a CRLF, at most:
		// a line over the limit is refused once limit+1 bytes are in.
		p.buf = grow(p.buf, 1, limit+2)
		n, err := p.r.Read(p.buf[len(p.buf):cap(p.buf)])
		p.buf = p.buf[:len(p.buf)+n]
		if err != nil {
			p.err = err
		}
	}
}
