package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

func TestMemoryPairOrder(t *testing.T) {
	ctx := context.Background()
	client, server := NewMemoryPair()
	defer client.Close()
	defer server.Close()

	const n = 100
	for i := range n {
		if err := client.Write(ctx, fmt.Appendf(nil, `{"id":%d}`, i)); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
	for i := range n {
		msg, err := server.Read(ctx)
		if err != nil {
			t.Fatalf("Read %d: %v", i, err)
		}
		if want := fmt.Sprintf(`{"id":%d}`, i); string(msg.Data) != want || msg.Related != "" {
			t.Fatalf("Read %d = %q (related %q), want %q", i, msg.Data, msg.Related, want)
		}
	}

	// And the other way.
	if err := server.Write(ctx, []byte(`{"back":1}`)); err != nil {
		t.Fatal(err)
	}
	if msg, err := client.Read(ctx); err != nil || string(msg.Data) != `{"back":1}` {
		t.Fatalf("client Read = %q, %v", msg.Data, err)
	}
}

func TestMemoryPairCopies(t *testing.T) {
	ctx := context.Background()
	client, server := NewMemoryPair()
	defer client.Close()
	defer server.Close()

	buf := []byte(`{"a":1}`)
	if err := client.Write(ctx, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"b":2}`) // the writer reuses its buffer
	msg, err := server.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != `{"a":1}` {
		t.Fatalf("Read = %q, want the bytes as written", msg.Data)
	}
}

func TestMemoryPairCloseDrainsThenEOF(t *testing.T) {
	ctx := context.Background()
	client, server := NewMemoryPair()
	defer server.Close()

	for _, s := range []string{"1", "2"} {
		if err := client.Write(ctx, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil { // idempotent
		t.Fatalf("second Close: %v", err)
	}

	for _, want := range []string{"1", "2"} {
		msg, err := server.Read(ctx)
		if err != nil || string(msg.Data) != want {
			t.Fatalf("Read = %q, %v; want %q", msg.Data, err, want)
		}
	}
	if _, err := server.Read(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after drain = %v, want io.EOF", err)
	}
	if err := server.Write(ctx, []byte("x")); err == nil {
		t.Fatal("Write to a closed peer succeeded")
	}
	if _, err := client.Read(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read on closed end = %v, want ErrClosed", err)
	}
	if err := client.Write(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write on closed end = %v, want ErrClosed", err)
	}
}

func TestMemoryPairCloseUnblocksRead(t *testing.T) {
	client, server := NewMemoryPair()
	defer server.Close()

	errs := make(chan error, 2)
	go func() { _, err := client.Read(context.Background()); errs <- err }()
	go func() { _, err := server.Read(context.Background()); errs <- err }()
	time.Sleep(10 * time.Millisecond) // let both block
	client.Close()

	// One side sees its own Close, the other the peer's.
	got := []error{<-errs, <-errs}
	closed, eof := 0, 0
	for _, err := range got {
		switch {
		case errors.Is(err, ErrClosed):
			closed++
		case errors.Is(err, io.EOF):
			eof++
		}
	}
	if closed != 1 || eof != 1 {
		t.Fatalf("blocked Reads returned %v, want one ErrClosed and one io.EOF", got)
	}
}

func TestMemoryPairReadContext(t *testing.T) {
	client, server := NewMemoryPair()
	defer client.Close()
	defer server.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := server.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read = %v, want DeadlineExceeded", err)
	}

	// The Conn is still usable afterwards.
	if err := client.Write(context.Background(), []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if msg, err := server.Read(context.Background()); err != nil || string(msg.Data) != "ok" {
		t.Fatalf("Read = %q, %v", msg.Data, err)
	}
}

func TestMemoryPairConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	client, server := NewMemoryPair()
	defer client.Close()
	defer server.Close()

	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := client.Write(ctx, fmt.Appendf(nil, "%d/%d", w, i)); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}

	// Each writer's messages arrive in its own order.
	next := make([]int, writers)
	for range writers * each {
		msg, err := server.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var w, i int
		if _, err := fmt.Sscanf(string(msg.Data), "%d/%d", &w, &i); err != nil {
			t.Fatalf("bad message %q: %v", msg.Data, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: got message %d, want %d", w, i, next[w])
		}
		next[w]++
	}
	wg.Wait()
}

func TestMemoryTransport(t *testing.T) {
	ctx := context.Background()
	client, server := NewMemoryPair()
	defer client.Close()
	defer server.Close()

	tr := NewMemoryTransport(server)
	got, err := tr.Connect(ctx)
	if err != nil || got != server {
		t.Fatalf("Connect = %v, %v; want the wrapped Conn", got, err)
	}
	if _, err := tr.Connect(ctx); err == nil {
		t.Fatal("second Connect succeeded")
	}
	if _, err := NewMemoryTransport(nil).Connect(ctx); err == nil {
		t.Fatal("Connect with a nil Conn succeeded")
	}
}
