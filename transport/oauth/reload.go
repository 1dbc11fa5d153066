package oauth

// reloadStored takes the Store's tokens for the resource when they are not
// those t holds: a `conduit login` since (in another process, or this
// command's own sign-in at a TTY), so that a transport with no person to
// ask (a host's server in "needs sign-in", a command that signed in and
// connects again) starts using them without being built anew. Under t.mu.
func (t *Transport) reloadStored() bool {
	if t.cfg.Store == nil || t.cfg.IgnoreStored {
		return false
	}
	e, ok, err := t.cfg.Store.Load(t.cfg.Resource)
	if err != nil {
		t.loadErr = err
		return false
	}
	if !ok || e.AccessToken == "" {
		return false
	}
	if p, isP := t.ts.(*persistSource); isP {
		p.mu.Lock()
		same := p.tok.AccessToken == e.AccessToken && p.tok.RefreshToken == e.RefreshToken
		p.mu.Unlock()
		if same {
			return false
		}
	}
	if err := t.dpop.restore(e); err != nil { // as New does: a DPoP-bound token needs its key
		t.loadErr = err
		return false
	}
	t.loadErr = nil
	t.ts = t.persisting(e.config(), e.token(), e.AuthServer)
	t.gen++
	return true
}
