package transport

// bigMessage is the size from which a message's buffer stops doubling and
// takes the capacity of its whole limit at once (see grow).
const bigMessage = 1 << 20

// grow returns buf with room for at least need more bytes, keeping its
// contents, and never with a capacity over limit (which must be at least
// len(buf)+need). A message of a few KiB stays in a few KiB: the capacity
// doubles from 4 KiB. Past bigMessage the next capacity is limit itself:
// doubling on would hold the old buffer and one twice its size at once,
// and leave them behind as garbage (a message read that way cost about
// three times itself, and one refused at the limit twice the limit). A
// capacity of the limit is address space first: pages of fresh memory
// become resident only as bytes arrive, so reading a message holds about
// the message (plus at most 2 MiB left behind), and refusing one holds the
// limit. Memory the heap reuses is cleared whole, which makes it resident
// up to the limit (and costs a few ms per 64 MiB): the price of a message
// over 1 MiB, bounded by the limit a hostile server could fill anyway, and
// paid only while the message is read when it fills under a quarter of
// the limit (fit).
func grow(buf []byte, need, limit int) []byte {
	if cap(buf)-len(buf) >= need {
		return buf
	}
	n := max(2*cap(buf), 4<<10, len(buf)+need)
	if cap(buf) >= bigMessage {
		n = limit
	}
	n = min(n, limit)
	grown := make([]byte, len(buf), n)
	copy(grown, buf)
	return grown
}

// fit returns b, or a copy of its size when b is a buffer grow gave the
// limit's capacity and the message filled less than a quarter of it: a
// message may be held for long (until its call's caller takes it), and
// the capacity may be resident (see grow). One copy of a message under a
// quarter of the limit is cheaper than holding the limit for it.
func fit(b []byte) []byte {
	msg, _ := keep(b)
	return msg
}

// keep splits b, a message read into a buffer, into the message to hand
// over and the buffer to read the next one into (empty, nil when none is
// kept). A message that fills a quarter of a big buffer or more is handed
// over with it, with no second copy, and the reader starts a new buffer; a
// smaller one is copied to its size and the buffer kept, so that a reader
// of many messages over 1 MiB reuses the memory its buffer made resident
// instead of taking the limit's capacity anew for each (the heap clears a
// reused span whole: a flood of 3 MB log entries held 270 MB that way).
func keep(b []byte) (msg, buf []byte) {
	if cap(b) > bigMessage && len(b) < cap(b)/4 {
		return append(make([]byte, 0, len(b)), b...), b[:0]
	}
	return b, nil
}
