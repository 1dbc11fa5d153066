// Package testpeer gives Conduit's tests their real peers and network
// fixtures, written once: the go-sdk v1.8.0 everything-server, built once
// per test binary, a loopback URL nothing listens on, a count of the
// goroutines in a synctest bubble, and members of every kind for each
// field of a struct (and a struct with every field set from them). Only
// tests import it.
package testpeer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
)

// EverythingServer builds the go-sdk conformance everything-server (a tool
// in go.mod) once per test binary and returns the binary's path.
var EverythingServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "conduit-peer-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "everything-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build everything-server: %v\n%s", err, out)
	}
	return bin, nil
})

// ClosedURL is an http:// URL on a loopback port that was just closed:
// nothing listens there.
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/mcp"
}

// BubbleGoroutines counts the goroutines that run in a synctest bubble:
// unlike runtime.NumGoroutine, it does not see goroutines of earlier tests
// still on their way out.
func BubbleGoroutines(t testing.TB) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(buf.String()) {
		if strings.HasPrefix(line, "goroutine ") && strings.Contains(line, "synctest bubble") {
			n++
		}
	}
	return n
}

// JSONMembers returns members, as JSON text without braces, that
// encoding/json decodes into the fields of the struct type typ: each of
// its fields under its JSON name with a value of each kind (a string, a
// bool, a number, an object, an array, null). A fast decoder held to
// json.Unmarshal on objects holding each of them cannot skip a field that
// json.Unmarshal fills, even one added to the struct after the decoder was
// written. Embedded structs are not supported.
func JSONMembers(t testing.TB, typ reflect.Type) []string {
	t.Helper()
	var members []string
	for f := range typ.Fields() {
		if f.Anonymous {
			t.Fatalf("JSONMembers(%s): embedded field %s", typ, f.Name)
		}
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		for _, v := range []string{`"x"`, `true`, `1`, `{"a":1}`, `[]`, `null`} {
			members = append(members, fmt.Sprintf("%q:%s", name, v))
		}
	}
	return members
}

// FillFields sets every field of the struct ptr points to that
// encoding/json decodes, from JSONMembers: the last value of a kind its
// type takes, null left out. It fails t when a field is left zero (its
// type takes none of them), so that a hand encoder held to json.Marshal on
// the filled struct writes every field, even one added after the encoder
// was written.
func FillFields(t testing.TB, ptr any) {
	t.Helper()
	v := reflect.ValueOf(ptr).Elem()
	for _, m := range JSONMembers(t, v.Type()) {
		if !strings.HasSuffix(m, ":null") {
			_ = json.Unmarshal([]byte("{"+m+"}"), ptr) // a kind the field does not take fails
		}
	}
	for f := range v.Type().Fields() {
		if f.IsExported() && f.Tag.Get("json") != "-" && v.FieldByIndex(f.Index).IsZero() {
			t.Fatalf("FillFields(%s): field %s left zero", v.Type(), f.Name)
		}
	}
}
