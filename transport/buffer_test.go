package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// grow doubles from 4 KiB to 1 MiB, then jumps to the limit: never past it.
func TestGrowCapacities(t *testing.T) {
	const limit = 64 << 20
	var caps []int
	var b []byte
	for cap(b) < limit {
		b = grow(b[:cap(b)], 1, limit)
		caps = append(caps, cap(b))
	}
	want := []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, limit}
	if !equalInts(caps, want) {
		t.Fatalf("capacities %v, want %v", caps, want)
	}
	if b := grow(make([]byte, 3000), 100, 3050); cap(b) != 3050 || len(b) != 3000 {
		t.Fatalf("grow near the limit: len %d cap %d, want 3000 and 3050", len(b), cap(b))
	}
	if b := grow(make([]byte, 10, 20), 10, 100); cap(b) != 20 {
		t.Fatalf("grow with room: cap %d, want 20 (kept)", cap(b))
	}
	if b := grow(nil, 10000, 1<<20); cap(b) != 10000 {
		t.Fatalf("grow(nil, 10000): cap %d, want 10000", cap(b))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A line over several reads comes back whole, in a buffer that never grew
// past the limit; one over the limit is refused before its bytes past the
// limit are held. A big line that fills a quarter of the limit or more is
// handed over with its buffer; a smaller one is copied to its size and the
// buffer kept for the next big line, which is read into it.
func TestReadLineBigLines(t *testing.T) {
	const limit = 3 << 20
	big := bytes.Repeat([]byte("y"), 2<<20+5)
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(big), strings.NewReader("\n"), bytes.NewReader(big), strings.NewReader("\nsmall\n"), bytes.NewReader(bytes.Repeat([]byte("z"), limit+1))), 64<<10)
	line, spare, err := readLine(r, limit, nil)
	if err != nil || !bytes.Equal(line, big) || cap(line) != limit || spare != nil {
		t.Fatalf("readLine = %d bytes (cap %d, spare %d), %v; want %d bytes in a buffer of the limit, handed over", len(line), cap(line), cap(spare), err, len(big))
	}
	// With the limit four times the line, the line is copied to its size,
	// and the buffer is kept: the next big line is read into it.
	mid := append(bytes.Repeat([]byte("m"), 2<<20), '\n')
	r2 := bufio.NewReaderSize(bytes.NewReader(bytes.Repeat(mid, 3)), 64<<10)
	var first []byte
	for i := range 3 {
		line, spare, err = readLine(r2, 4*len(big)+4, spare)
		if err != nil || !bytes.Equal(line, mid[:len(mid)-1]) || cap(line) > len(mid)+8<<10 {
			t.Fatalf("line %d = %d bytes (cap %d), %v; want %d bytes at about their size", i, len(line), cap(line), err, len(mid)-1)
		}
		if cap(spare) != 4*len(big)+4 || len(spare) != 0 {
			t.Fatalf("line %d: spare of cap %d, len %d; want the limit's buffer, empty", i, cap(spare), len(spare))
		}
		if i == 0 {
			first = spare[:1]
		} else if &spare[:1][0] != &first[0] {
			t.Fatalf("line %d was read into a new buffer, not the one kept", i)
		}
	}
	if line, _, err = readLine(r, limit, nil); err != nil || !bytes.Equal(line, big) {
		t.Fatalf("second big line = %d bytes, %v", len(line), err)
	}
	if line, _, err = readLine(r, limit, nil); err != nil || string(line) != "small" || cap(line) > 8 {
		t.Fatalf("readLine = %q (cap %d), %v; want \"small\" in a buffer of its size class", line, cap(line), err)
	}
	var tooLong *MessageTooLongError
	if _, _, err := readLine(r, limit, nil); !errors.As(err, &tooLong) {
		t.Fatalf("readLine over the limit = %v, want *MessageTooLongError", err)
	}
}

// A JSON body is read whole up to the limit, refused one byte past it.
func TestReadAllLimit(t *testing.T) {
	body := bytes.Repeat([]byte("j"), 2<<20)
	got, err := readAll(bytes.NewReader(body), len(body))
	if err != nil || !bytes.Equal(got, body) || cap(got) > len(body)+1 {
		t.Fatalf("readAll = %d bytes (cap %d), %v; want %d bytes, cap at most the limit + 1", len(got), cap(got), err, len(body))
	}
	var tooLong *MessageTooLongError
	if _, err := readAll(bytes.NewReader(body), len(body)-1); !errors.As(err, &tooLong) || tooLong.What != "JSON response body" {
		t.Fatalf("readAll over the limit = %v, want *MessageTooLongError", err)
	}
}

// A big event's data is handed over without a copy, and what follows it in
// the same read (the next event, a CRLF's LF) is parsed from a buffer of
// the parser's own.
func TestSSEBigEventDetached(t *testing.T) {
	big := strings.Repeat("d", bigMessage+10)
	stream := "data: " + big + "\r\n\r\ndata: next\r\n\r\n: comment\ndata: " + big + "\n\n" +
		"data: " + big + "\ndata: second line\n\n"
	p := newSSEParser(4 << 20)
	p.reset(strings.NewReader(stream))
	for i, want := range []string{big, "next", big, big + "\nsecond line"} {
		got, err := p.next()
		if err != nil || string(got) != want {
			t.Fatalf("event %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	if _, err := p.next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// A stream of big events under a quarter of the limit keeps a buffer of
// four times the first one, not the limit's capacity (which the collector
// counts live), and a larger event that fits in it is copied out of it
// rather than taking it along: only the first event takes the limit's
// capacity, and every event is read whole.
func TestSSEKeptBufferFitsTheEvents(t *testing.T) {
	const limit, size = 64 << 20, 3 << 20
	sizes := []int{size, size, size + size/2, size, 2 * size, size}
	var stream strings.Builder
	for i, n := range sizes {
		stream.WriteString("data: " + strings.Repeat(string(rune('a'+i)), n) + "\n\n")
	}
	p := newSSEParser(limit)
	p.reset(chunked{strings.NewReader(stream.String())}) // as a socket gives it
	fitted := 4*size + 4<<10
	for i, n := range sizes {
		got, err := p.next()
		if err != nil || len(got) != n || got[0] != byte('a'+i) || got[n-1] != byte('a'+i) {
			t.Fatalf("event %d: %d bytes, %v; want %d bytes", i, len(got), err, n)
		}
		if cap(got) != n {
			t.Fatalf("event %d: cap %d, want %d (a copy of its size)", i, cap(got), n)
		}
		if cap(p.buf) != fitted {
			t.Fatalf("after event %d: the parser's buffer has cap %d, want %d (four times the first event)", i, cap(p.buf), fitted)
		}
	}
	if _, err := p.next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// chunked reads at most 64 KiB at a time, as a socket does.
type chunked struct{ r io.Reader }

func (c chunked) Read(b []byte) (int, error) { return c.r.Read(b[:min(len(b), 64<<10)]) }

// Stdio lines under a quarter of the limit keep a buffer of four times the
// first one, not the limit's capacity, and a longer line that fits in it
// is copied out of it rather than taking it along.
func TestReadLineKeptBufferFitsTheLines(t *testing.T) {
	const limit, size = 64 << 20, 3 << 20
	sizes := []int{size, size, size + size/2, size, 2 * size, size}
	var stream bytes.Buffer
	for i, n := range sizes {
		stream.Write(bytes.Repeat([]byte{byte('a' + i)}, n))
		stream.WriteByte('\n')
	}
	r := bufio.NewReaderSize(&stream, 64<<10)
	var spare []byte
	fitted := 4*size + 4<<10
	for i, n := range sizes {
		line, next, err := readLine(r, limit, spare)
		spare = next
		if err != nil || len(line) != n || cap(line) != n || line[0] != byte('a'+i) || line[n-1] != byte('a'+i) {
			t.Fatalf("line %d: %d bytes (cap %d), %v; want %d bytes, a copy of its size", i, len(line), cap(line), err, n)
		}
		if cap(spare) != fitted || len(spare) != 0 {
			t.Fatalf("after line %d: spare of cap %d, len %d; want %d (four times the first line), empty", i, cap(spare), len(spare), fitted)
		}
	}
}
