package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A server that needs sign-in, no stored tokens, no person: the command
// fails at once, exit 3, naming conduit login; nothing is registered.
func TestCommandWithoutTokensNamesLogin(t *testing.T) {
	var other int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			other++
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(dir, "tokens.json"))
	r := runInProcess(t, "tools", "--url", srv.URL+"/mcp")
	assert.Equal(t, 3, r.code, r.String())
	assert.Equal(t, "conduit: the server "+srv.URL+"/mcp needs sign-in: run `conduit login --url "+srv.URL+"/mcp` (or `conduit login --config FILE SERVER`), then again\n", r.stderr)
	srv.Close()
	assert.Zero(t, other, "no discovery, no registration")

	// A token file others can read is refused, and said so.
	p := filepath.Join(dir, "tokens.json")
	assert.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
	assert.NoError(t, os.Chmod(p, 0o644))
	srv2 := httptest.NewServer(srv.Config.Handler)
	defer srv2.Close()
	r = runInProcess(t, "tools", "--url", srv2.URL+"/mcp")
	assert.Equal(t, 3, r.code, r.String())
	assert.Contains(t, r.stderr, "has mode -rw-r--r--: others can read it; refusing (chmod 600 it)")
}

func TestLogoutForgetsTokens(t *testing.T) {
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(t.TempDir(), "tokens.json"))
	r := runInProcess(t, "logout", "--url", "https://mcp.example.com/mcp")
	assert.Equal(t, 0, r.code, r.String())
	assert.Equal(t, "no tokens kept for https://mcp.example.com/mcp\n", r.stdout)
	r = runInProcess(t, "login")
	assert.Equal(t, 2, r.code, r.String())
	assert.Contains(t, r.stderr, "give --url URL or --config FILE SERVER")
}
