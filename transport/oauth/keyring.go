package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/zalando/go-keyring"
)

// KeyringService is the service name under which the OS keyring keeps
// Conduit's tokens, one secret per resource URL.
const KeyringService = "conduit"

// keyringTimeout bounds one keyring call: a keyring that does not answer
// (a locked collection waiting on a prompt nobody sees) is left for the
// file, not waited on.
const keyringTimeout = 5 * time.Second

// DefaultStore is the Store of the commands, the host and the gateway: the
// OS keyring where one answers, else the file of DefaultStorePath. Setting
// $CONDUIT_TOKEN_FILE means that file only (tests, a second identity).
func DefaultStore() *Store {
	return &Store{Keyring: os.Getenv("CONDUIT_TOKEN_FILE") == ""}
}

// keyringPresent says whether a keyring may be there to answer: on Linux
// and the BSDs the Secret Service needs a D-Bus session bus, and without
// one go-keyring's D-Bus library would start one (dbus-launch), a daemon
// left behind by a command; so no bus address, no keyring.
var keyringPresent = func() bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return true
	}
	_, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid()))
	return err == nil
}

// errKeyringDown is a keyring that did not answer in keyringTimeout.
var errKeyringDown = errors.New("the OS keyring did not answer")

// keyringCall runs f with keyringTimeout. A call that times out is left
// running (go-keyring has no cancel); the Store uses the file from then on.
func keyringCall[T any](f func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := f(); ch <- res{v, err} }()
	t := time.NewTimer(keyringTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-t.C:
		var zero T
		return zero, errKeyringDown
	}
}

// useKeyring says whether to try the keyring (under s.mu).
func (s *Store) useKeyring() bool { return s.Keyring && !s.keyringDown && keyringPresent() }

// keyringFailed notes a keyring that answered with an error other than
// "not found": the file is used for the rest of the Store's life, and
// Where says why (the error text of go-keyring holds no secret).
func (s *Store) keyringFailed(err error) {
	s.keyringDown = true
	s.keyringErr = err
}

// keyringLoad returns the keyring's entry of resource; answered is false
// when the keyring is not used or did not answer.
func (s *Store) keyringLoad(resource string) (e Entry, found, answered bool) {
	if !s.useKeyring() {
		return Entry{}, false, false
	}
	v, err := keyringCall(func() (string, error) { return keyring.Get(KeyringService, resource) })
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return Entry{}, false, true
	case err != nil:
		s.keyringFailed(err)
		return Entry{}, false, false
	}
	if json.Unmarshal([]byte(v), &e) != nil || e.Resource != resource {
		return Entry{}, false, true // not ours, or damaged: as if absent (a sign-in replaces it)
	}
	return e, true, true
}

// keyringSave keeps e in the keyring; false: it is not used or failed.
func (s *Store) keyringSave(e Entry) bool {
	if !s.useKeyring() {
		return false
	}
	data, err := json.Marshal(e)
	if err != nil {
		return false
	}
	if _, err := keyringCall(func() (struct{}, error) {
		return struct{}{}, keyring.Set(KeyringService, e.Resource, string(data))
	}); err != nil {
		s.keyringFailed(err)
		return false
	}
	return true
}

// keyringDelete forgets resource in the keyring; found: it held some.
func (s *Store) keyringDelete(resource string) (found bool) {
	if !s.useKeyring() {
		return false
	}
	_, err := keyringCall(func() (struct{}, error) { return struct{}{}, keyring.Delete(KeyringService, resource) })
	switch {
	case err == nil:
		return true
	case !errors.Is(err, keyring.ErrNotFound):
		s.keyringFailed(err)
	}
	return false
}

// Where says where the Store kept the tokens it last saved (or would keep
// them): "the OS keyring (service conduit)" or "the file PATH", with why
// the keyring was passed over when it was asked for.
func (s *Store) Where() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.savedKeyring || s.useKeyring() && !s.savedFile {
		return "the OS keyring (service " + KeyringService + ")"
	}
	p, err := s.path()
	if err != nil {
		p = "(no user config dir)"
	}
	w := "the file " + p
	switch {
	case !s.Keyring:
	case s.keyringErr != nil:
		w += " (the OS keyring failed: " + s.keyringErr.Error() + ")"
	case !keyringPresent():
		w += " (no OS keyring: no D-Bus session)"
	}
	return w
}
