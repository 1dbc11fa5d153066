package transport

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// stdoutBufSize is the buffer a stdio connection reads its server's stdout
// through while messages come.
const stdoutBufSize = 64 << 10

// parkedSize is what a parkedReader waits for the next burst with.
const parkedSize = 512

// stdoutReaders and stderrReaders are the buffered readers of the stdio
// connections' bursts: one is taken when a burst starts and given back
// once everything read has been handed out, so an idle connection holds
// none (decision 60: the 64 KB and 8 KB buffers each connection kept made
// a host's idle stdio servers cost 72 KB apiece).
var (
	stdoutReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, stdoutBufSize) }}
	stderrReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxStderrLine) }}
)

// parkedReader reads src in bursts: while one lasts through a bufio.Reader
// of pool; between bursts it waits in a Read into its own small buffer,
// whose bytes begin the next burst.
type parkedReader struct {
	src   io.Reader
	pool  *sync.Pool
	small []byte
	first bytes.Reader  // what the wait read, not yet taken by r
	r     *bufio.Reader // the burst's; nil between bursts
}

func newParkedReader(src io.Reader, pool *sync.Pool) *parkedReader {
	return &parkedReader{src: src, pool: pool, small: make([]byte, parkedSize)}
}

// reader returns the reader of the burst under way, waiting for src to
// have something when none is: src's error (io.EOF at its end) when it
// has nothing more.
func (p *parkedReader) reader() (*bufio.Reader, error) {
	if p.r != nil {
		return p.r, nil
	}
	for {
		n, err := p.src.Read(p.small)
		if n > 0 { // an error comes again at the next Read
			p.first.Reset(p.small[:n])
			p.r = p.pool.Get().(*bufio.Reader)
			p.r.Reset(p)
			return p.r, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Read is what the burst's bufio.Reader reads: the bytes the wait read,
// then src.
func (p *parkedReader) Read(b []byte) (int, error) {
	if p.first.Len() > 0 {
		return p.first.Read(b)
	}
	return p.src.Read(b)
}

// rest ends the burst once everything read has been handed out: the
// bufio.Reader goes back to the pool.
func (p *parkedReader) rest() {
	if p.r != nil && p.r.Buffered() == 0 && p.first.Len() == 0 {
		p.release()
	}
}

// release gives the burst's bufio.Reader back, whatever it still holds.
func (p *parkedReader) release() {
	if p.r != nil {
		p.r.Reset(nil)
		p.pool.Put(p.r)
		p.r = nil
	}
}
