// Package sanitize makes text and JSON values received from MCP servers safe
// to show to a user in a terminal, a log file or a UI.
//
// A server is untrusted: anything it sends (log messages in particular) may
// carry terminal escape sequences that recolour, retitle or rewrite the
// screen, bidirectional-override characters that make displayed text differ
// from its logical content ("Trojan Source", CVE-2021-42574), invisible
// characters that hide text, or values large or deep enough to hurt the
// client. Everything here is pure, allocation-bounded by its input and safe
// for concurrent use.
//
// Conduit already sanitises server log entries before any callback sees
// them. Import this package to clean other server text a host shows
// (notification params, tool results, prompt text): Text for one line,
// Lines for text whose line breaks matter, JSON for JSON shown as text.
package sanitize

import "unicode/utf8"

// MaxString is the rune limit Value applies to every string (map keys too), so
// that one log entry cannot flood the user's screen or the client's memory.
const MaxString = 4096

// MaxDepth is the number of nesting levels of maps and slices that Value
// keeps; deeper containers are replaced by a marker string. It bounds both the
// recursion in Value and what a user has to scroll through.
const MaxDepth = 16

// ellipsis marks a clamped string. It counts toward the limit given to Text.
const ellipsis = '…'

// escape-sequence parser states, after the DEC/ECMA-48 terminal parser
// (https://vt100.net/emu/dec_ansi_parser), reduced to what is needed to know
// where a sequence ends.
const (
	stGround   = iota // ordinary text
	stEsc             // after ESC
	stEscInter        // after ESC and one or more intermediate bytes 0x20–0x2F
	stCSI             // control sequence: ESC [ or U+009B, up to a final byte
	stString          // OSC, DCS, SOS, PM or APC body, up to a terminator
)

// Text returns s made safe to show in a terminal or log on a single line.
//
// The result is valid UTF-8 (each invalid byte becomes U+FFFD) and contains
// none of these, because each can hide, reorder or rewrite what the user sees:
//
//   - C0 and C1 controls (U+0000–U+001F, U+007F–U+009F);
//   - bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E and
//     U+2066–U+2069 (Trojan Source);
//   - U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR;
//   - invisible format characters that can hide or split text with no
//     orthographic purpose: U+200B ZERO WIDTH SPACE, the rest of
//     U+2060–U+206F (word joiner, invisible operators, deprecated shaping
//     controls), U+FEFF ZERO WIDTH NO-BREAK SPACE (BOM), U+FFF9–U+FFFB
//     interlinear annotation controls, and the tag characters
//     U+E0000–U+E007F, which can carry invisible ASCII (prompt smuggling;
//     the cost is that subdivision flag emoji degrade to a plain black flag).
//
// U+200C ZERO WIDTH NON-JOINER and U+200D ZERO WIDTH JOINER are kept: Persian,
// Indic scripts and emoji sequences need them. Variation selectors and the
// soft hyphen are kept for the same reason.
//
// Terminal escape sequences are removed whole, not just their ESC, so no
// "[31m" residue is left: CSI (ESC [ or U+009B, parameters, final byte
// 0x40–0x7E), other ESC sequences (ESC, intermediates, final byte), and
// OSC, DCS, SOS, PM and APC strings (ESC ] P X ^ _ or U+009D U+0090 U+0098
// U+009E U+009F) up to BEL, ESC \ or U+009C. As in a terminal, an
// unterminated string swallows the rest of s, CAN or SUB cancels a sequence,
// and a character that cannot continue a sequence ends it and is then
// treated as ordinary text.
//
// Line breaks and tabs (TAB, LF, VT, FF, CR, U+0085, U+2028, U+2029) would
// let a server forge extra log lines or overwrite the current one, so each
// run of them becomes a single space.
//
// If max > 0 the result has at most max runes: when the sanitised text is
// longer it is cut to max-1 runes followed by "…", so the ellipsis counts
// toward max. Cuts fall on rune boundaries. max <= 0 means no limit.
//
// Text is idempotent: Text(Text(s, max), max) == Text(s, max).
func Text(s string, max int) string {
	if isPlainASCII(s, false) && (max <= 0 || len(s) <= max) {
		return s
	}
	return clean(s, max, false)
}

// Lines returns s made safe to show in a terminal as lines of text, such as
// a tool result's text, a resource's or a prompt's. It removes what Text
// removes, with no length limit, except that line breaks and tabs are kept:
// each tab stays a tab, CR LF becomes LF, and every other line break (CR,
// VT, FF, U+0085, U+2028, U+2029) becomes LF, so a CR cannot overwrite the
// line it ends and the text shows as many lines as it logically has. Runs
// of line breaks are kept, blank lines included.
//
// Lines is idempotent: Lines(Lines(s)) == Lines(s).
func Lines(s string) string {
	if isPlainASCII(s, true) {
		return s
	}
	return clean(s, 0, true)
}

// clean is Text (lines false) or Lines (lines true).
func clean(s string, max int, lines bool) string {
	w := clampWriter{max: max, buf: make([]byte, 0, min(len(s), 1<<16)+utf8.UTFMax)}
	state := stGround
	space := false // the last thing written was a line-break replacement
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		reprocess := false
		switch state {
		case stGround:
			switch {
			case r == 0x1B:
				state = stEsc
			case r == 0x9B:
				state = stCSI
			case r == 0x9D || r == 0x90 || r == 0x98 || r == 0x9E || r == 0x9F:
				state = stString
			case lines && isLineBreak(r):
				switch {
				case r == '\t':
					w.write('\t')
				case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
					// CR LF: the LF writes the break
				default:
					w.write('\n')
				}
			case isLineBreak(r):
				if !space {
					if !w.write(' ') {
						return w.String()
					}
					space = true
				}
			case forbidden(r):
				// dropped
			default:
				if !w.write(r) {
					return w.String()
				}
				space = false
			}
		case stEsc:
			switch {
			case r == '[':
				state = stCSI
			case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
				state = stString
			case r == 0x1B:
				// ESC restarts the sequence.
			case r == 0x18 || r == 0x1A:
				state = stGround
			case r >= 0x20 && r <= 0x2F:
				state = stEscInter
			case r >= 0x30 && r <= 0x7E:
				state = stGround // complete two-byte sequence, e.g. ESC c
			case r < 0x20 || r == 0x7F:
				// executed or ignored by a terminal mid-sequence; dropped
			default:
				state, reprocess = stGround, true
			}
		case stEscInter:
			switch {
			case r >= 0x20 && r <= 0x2F:
			case r >= 0x30 && r <= 0x7E:
				state = stGround
			case r == 0x1B:
				state = stEsc
			case r == 0x18 || r == 0x1A:
				state = stGround
			case r < 0x20 || r == 0x7F:
			default:
				state, reprocess = stGround, true
			}
		case stCSI:
			switch {
			case r >= 0x20 && r <= 0x3F: // parameter and intermediate bytes
			case r >= 0x40 && r <= 0x7E:
				state = stGround
			case r == 0x1B:
				state = stEsc
			case r == 0x18 || r == 0x1A:
				state = stGround
			case r < 0x20 || r == 0x7F:
			default:
				state, reprocess = stGround, true
			}
		case stString:
			switch {
			case r == 0x07 || r == 0x9C || r == 0x18 || r == 0x1A:
				state = stGround
			case r == 0x1B:
				state = stEsc // ESC \ ends the string; any other ESC starts anew
			case r >= 0x80 && r <= 0x9F:
				state, reprocess = stGround, true
			}
		}
		if !reprocess {
			i += size
		}
	}
	return w.String()
}

// isPlainASCII reports whether s is printable ASCII only (with LF and tab
// when lines), which Text and Lines return unchanged (when short enough)
// without allocating.
func isPlainASCII(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7E) && !(lines && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

// isLineBreak reports whether r breaks or moves within a line; Text turns runs
// of these into one space.
func isLineBreak(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// forbidden reports whether Text drops r outside an escape sequence. See Text
// for why each range is here.
func forbidden(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7F && r <= 0x9F): // C0, DEL, C1
		return true
	case r == 0x061C || r == 0x200E || r == 0x200F || (r >= 0x202A && r <= 0x202E): // bidi
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	case r == 0x200B || (r >= 0x2060 && r <= 0x206F): // zero width, bidi isolates, invisible
		return true
	case r == 0xFEFF || (r >= 0xFFF9 && r <= 0xFFFB) || (r >= 0xE0000 && r <= 0xE007F):
		return true
	}
	return false
}

// clampWriter accumulates runes and, once more than max arrive, replaces the
// last one that fits with the ellipsis.
type clampWriter struct {
	buf []byte
	max int // <= 0: unlimited
	n   int // runes written
	cut int // len(buf) after max-1 runes
}

// write appends r, or clamps and returns false if r would exceed max.
func (w *clampWriter) write(r rune) bool {
	if w.max > 0 {
		if w.n == w.max {
			w.buf = utf8.AppendRune(w.buf[:w.cut], ellipsis)
			return false
		}
		if w.n == w.max-1 {
			w.cut = len(w.buf)
		}
	}
	w.buf = utf8.AppendRune(w.buf, r)
	w.n++
	return true
}

func (w *clampWriter) String() string { return string(w.buf) }
