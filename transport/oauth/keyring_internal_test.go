package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zalando/go-keyring"
)

func withKeyring(t *testing.T, mockErr error) {
	t.Helper()
	present := keyringPresent
	keyringPresent = func() bool { return true }
	t.Cleanup(func() { keyringPresent = present })
	if mockErr != nil {
		keyring.MockInitWithError(mockErr)
	} else {
		keyring.MockInit()
	}
}

func testEntry() Entry {
	return Entry{Resource: "https://mcp.example.com/mcp", AuthServer: "https://as.example.com", ClientID: "c",
		TokenURL: "https://as.example.com/token", AccessToken: "at-SECRET", RefreshToken: "rt-SECRET", Expiry: time.Unix(2e9, 0).UTC()}
}

// A keyring that answers keeps the tokens: no file is written, Where says
// the keyring, Delete forgets them there.
func TestStoreKeyring(t *testing.T) {
	withKeyring(t, nil)
	p := filepath.Join(t.TempDir(), "conduit", "tokens.json")
	s := &Store{Path: p, Keyring: true}
	e := testEntry()
	require.NoError(t, s.Save(e))
	assert.Equal(t, "the OS keyring (service conduit)", s.Where())
	_, err := os.Stat(p)
	assert.ErrorIs(t, err, os.ErrNotExist, "no token file")
	v, err := keyring.Get(KeyringService, e.Resource)
	require.NoError(t, err)
	assert.Contains(t, v, `"refresh_token":"rt-SECRET"`)

	got, ok, err := (&Store{Path: p, Keyring: true}).Load(e.Resource) // another run
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, e, got)

	found, err := s.Delete(e.Resource)
	require.NoError(t, err)
	assert.True(t, found)
	_, err = keyring.Get(KeyringService, e.Resource)
	assert.ErrorIs(t, err, keyring.ErrNotFound)
	found, err = s.Delete(e.Resource)
	require.NoError(t, err)
	assert.False(t, found)
}

// A keyring that fails: the 0600 file, and Where says so and why; the
// error says nothing of the tokens. Tokens kept in the file then are found,
// and moved to the keyring once it answers.
func TestStoreKeyringFallsBackToTheFile(t *testing.T) {
	withKeyring(t, errors.New("no secret service"))
	p := filepath.Join(t.TempDir(), "conduit", "tokens.json")
	s := &Store{Path: p, Keyring: true}
	e := testEntry()
	require.NoError(t, s.Save(e))
	w := s.Where()
	assert.Equal(t, "the file "+p+" (the OS keyring failed: no secret service)", w)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	got, ok, err := s.Load(e.Resource)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, e, got)
	assert.False(t, strings.Contains(w, "SECRET"))

	// The keyring answers again (the next run): the file's tokens are found, and a save moves them.
	withKeyring(t, nil)
	s2 := &Store{Path: p, Keyring: true}
	got, ok, err = s2.Load(e.Resource)
	require.NoError(t, err)
	require.True(t, ok, "found in the file")
	assert.Equal(t, e, got)
	require.NoError(t, s2.Save(e))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "SECRET", "the file's copy is gone")
	_, err = keyring.Get(KeyringService, e.Resource)
	assert.NoError(t, err)
}

// Without Keyring (CONDUIT_TOKEN_FILE, a zero Store), or with no D-Bus
// session, the keyring is never asked.
func TestStoreWithoutKeyring(t *testing.T) {
	withKeyring(t, errors.New("asked"))
	p := filepath.Join(t.TempDir(), "tokens.json")
	s := &Store{Path: p}
	require.NoError(t, s.Save(testEntry()))
	assert.Equal(t, "the file "+p, s.Where())

	keyringPresent = func() bool { return false }
	s = &Store{Path: p, Keyring: true}
	require.NoError(t, s.Save(testEntry()))
	assert.Equal(t, "the file "+p+" (no OS keyring: no D-Bus session)", s.Where())

	t.Setenv("CONDUIT_TOKEN_FILE", p)
	assert.False(t, DefaultStore().Keyring)
	t.Setenv("CONDUIT_TOKEN_FILE", "")
	assert.True(t, DefaultStore().Keyring)
}
