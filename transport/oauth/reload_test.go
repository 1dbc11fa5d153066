package oauth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// A transport with no person to ask (a host's server) that failed for want
// of a sign-in takes the tokens a `conduit login` stored since, on its next
// 401, without being built anew.
func TestNoPersonTakesTokensStoredSince(t *testing.T) {
	r := newRealAS(t)
	st := newStore(t)
	waiting := r.transport(t, st, false)
	req, _ := http.NewRequest(http.MethodPost, r.Resource, strings.NewReader(`{}`))
	_, err := waiting.Client().Do(req)
	require.ErrorIs(t, err, oauth.ErrSignInNeeded)

	login := r.transport(t, st, true) // conduit login, another process
	require.Equal(t, http.StatusOK, post(t, login.Client(), r.Resource))
	assert.Equal(t, http.StatusOK, post(t, waiting.Client(), r.Resource))
	assert.Equal(t, int32(1), r.SignIns.Load())
	assert.True(t, waiting.SignedIn())
}
