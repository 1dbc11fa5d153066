package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/conduitmcp/conduit/transport"
)

// messageSize is the value of --max-message-bytes: a number of bytes, with
// an optional unit (KiB, MiB, GiB are powers of 1024; KB, MB, GB of 1000).
// 0 leaves the transport's default (64 MiB).
type messageSize int

// sizeUnits are the units --max-message-bytes accepts, in lower case.
var sizeUnits = map[string]int{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
}

func (s *messageSize) Set(v string) error {
	t := strings.TrimSpace(v)
	digits := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(t)
	}
	n, err := strconv.Atoi(t[:digits])
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[digits:]))]
	if err != nil || !ok || n <= 0 || n > maxMessageSize/unit {
		return fmt.Errorf("want a positive number of bytes up to 1GiB, such as 67108864 or 64MiB")
	}
	*s = messageSize(n * unit)
	return nil
}

// maxMessageSize bounds --max-message-bytes: a message is held in memory
// whole.
const maxMessageSize = 1 << 30

func (s *messageSize) String() string { return strconv.Itoa(int(*s)) }

func (s *messageSize) Type() string { return "SIZE" }

// sizeHint turns err, when a message was over the size limit, into the
// CLI's words: the limit and the flag that raises it, instead of the
// library's field.
func sizeHint(err error) error {
	var tooLong *transport.MessageTooLongError
	if !errors.As(err, &tooLong) {
		return err
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		return err
	}
	msg := ee.Error() // plain words it, when the library's text is in it
	if !strings.Contains(msg, sizeFlagHint) {
		msg += "; " + sizeFlagHint
	}
	return &exitError{code: ee.code, msg: msg, err: ee.err}
}

// sizeFlagHint is how the CLI says to raise a message size limit.
const sizeFlagHint = "raise it with --max-message-bytes"
