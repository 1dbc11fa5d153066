package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Store keeps tokens, keyed by the resource URL and the authorization
// server: in the OS keyring when Keyring is set and one answers, else in
// one JSON file, mode 0600, which it refuses to read when another user can
// read or write it (docs/decisions.md, 41).
type Store struct {
	// Path is the file; DefaultStorePath when empty.
	Path string
	// Keyring keeps the tokens in the OS keyring (service KeyringService,
	// one secret per resource) where one answers; the file otherwise.
	Keyring bool

	mu           sync.Mutex
	keyringDown  bool  // the keyring failed once: the file from then on
	keyringErr   error // why
	savedKeyring bool  // where the last Save went (Where)
	savedFile    bool
}

// DefaultStorePath is $CONDUIT_TOKEN_FILE, else conduit/tokens.json
// under the user config dir.
func DefaultStorePath() (string, error) {
	if p := os.Getenv("CONDUIT_TOKEN_FILE"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("oauth: no user config dir for the token file: %w", err)
	}
	return filepath.Join(dir, "conduit", "tokens.json"), nil
}

// Entry is what the Store keeps for one resource.
type Entry struct {
	Resource     string    `json:"resource"`
	AuthServer   string    `json:"authorization_server"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style"`
	Scopes       []string  `json:"scopes,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry"`
	// DPoPKey is the client's DPoP private key (a JWK; RFC 9449), kept
	// with the tokens it binds so that a refresh proves the same key.
	DPoPKey string `json:"dpop_key,omitempty"`
}

func (e Entry) key() string { return e.Resource + " " + e.AuthServer }

func (e Entry) config() *oauth2.Config {
	return &oauth2.Config{ClientID: e.ClientID, ClientSecret: e.ClientSecret, Scopes: e.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: oauth2.AuthStyle(e.AuthStyle)}}
}

func (e Entry) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: e.AccessToken, RefreshToken: e.RefreshToken, TokenType: e.TokenType, Expiry: e.Expiry}
}

func (s *Store) path() (string, error) {
	if s.Path != "" {
		return s.Path, nil
	}
	return DefaultStorePath()
}

// read returns the entries; a missing file is none.
func (s *Store) read() (map[string]Entry, error) {
	p, err := s.path()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Entry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("oauth: token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("oauth: token file %s has mode %v: others can read it; refusing (chmod 600 it)", p, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("oauth: token file: %w", err)
	}
	m := map[string]Entry{}
	if len(bytes.TrimSpace(data)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("oauth: token file %s is not valid JSON", p)
	}
	return m, nil
}

func (s *Store) write(m map[string]Entry) error {
	p, err := s.path()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("oauth: token file: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tokens-*")
	if err != nil {
		return fmt.Errorf("oauth: token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("oauth: token file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("oauth: token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("oauth: token file: %w", err)
	}
	return os.Rename(tmp.Name(), p)
}

// Load returns the entry of resource.
func (s *Store) Load(resource string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok, _ := s.keyringLoad(resource); ok {
		return e, true, nil
	}
	m, err := s.read() // also what was kept while the keyring did not answer
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range m {
		if e.Resource == resource {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Save keeps e, replacing whatever the store held for its resource (a
// changed authorization server replaces the old one's tokens).
func (s *Store) Save(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyringSave(e) {
		s.savedKeyring, s.savedFile = true, false
		_, _ = s.deleteFile(e.Resource) // an older copy kept while the keyring did not answer
		return nil
	}
	m, err := s.read()
	if err != nil {
		return err
	}
	for k, old := range m {
		if old.Resource == e.Resource {
			delete(m, k)
		}
	}
	m[e.key()] = e
	if err := s.write(m); err != nil {
		return err
	}
	s.savedKeyring, s.savedFile = false, true
	return nil
}

// Delete forgets the tokens of resource; it reports whether there were any.
func (s *Store) Delete(resource string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inKeyring := s.keyringDelete(resource)
	inFile, err := s.deleteFile(resource)
	return inKeyring || inFile, err
}

// deleteFile forgets resource in the file (under s.mu).
func (s *Store) deleteFile(resource string) (bool, error) {
	p, err := s.path()
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	m, err := s.read()
	if err != nil {
		return false, err
	}
	found := false
	for k, e := range m {
		if e.Resource == resource {
			delete(m, k)
			found = true
		}
	}
	if !found {
		return false, nil
	}
	return true, s.write(m)
}

// persistSource refreshes with the resource indicator (RFC 8707: go-sdk's
// does not) and saves every token it gets (a rotated refresh token
// replaces the old one).
type persistSource struct {
	t   *Transport
	cfg *oauth2.Config
	as  string

	mu  sync.Mutex
	tok *oauth2.Token
}

func (t *Transport) persisting(cfg *oauth2.Config, tok *oauth2.Token, as string) oauth2.TokenSource {
	p := &persistSource{t: t, cfg: cfg, as: as, tok: tok}
	p.save()
	return p
}

func (p *persistSource) save() {
	st := p.t.cfg.Store
	if st == nil {
		return
	}
	e := Entry{Resource: p.t.cfg.Resource, AuthServer: p.as, ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
		TokenURL: p.cfg.Endpoint.TokenURL, AuthStyle: int(p.cfg.Endpoint.AuthStyle), Scopes: p.cfg.Scopes,
		TokenType: p.tok.TokenType, AccessToken: p.tok.AccessToken, RefreshToken: p.tok.RefreshToken, Expiry: p.tok.Expiry,
		DPoPKey: p.t.dpop.keyJSON()}
	if old, ok, err := st.Load(e.Resource); err == nil && ok && old.AccessToken == e.AccessToken && old.RefreshToken == e.RefreshToken && old.AuthServer == e.AuthServer && old.DPoPKey == e.DPoPKey {
		return
	}
	_ = st.Save(e) // a token that cannot be kept still serves this run
}

// forceRefresh refreshes now, whatever the expiry says.
func (p *persistSource) forceRefresh() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshLocked()
}

// Token returns a valid token, refreshing ahead of expiry (oauth2's 10 s).
func (p *persistSource) Token() (*oauth2.Token, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tok.Valid() {
		return p.tok, nil
	}
	if err := p.refreshLocked(); err != nil {
		return nil, err
	}
	return p.tok, nil
}

// refreshLocked trades the refresh token for new tokens (a rotated
// refresh token replaces the old; oauth2 keeps the old when none comes).
func (p *persistSource) refreshLocked() error {
	if p.tok.RefreshToken == "" {
		return errors.New("oauth: the access token expired and there is no refresh token")
	}
	hc := &http.Client{Transport: withResource{base: p.t.asHTTP.Transport, resource: p.t.cfg.Resource},
		Timeout: p.t.asHTTP.Timeout, CheckRedirect: p.t.asHTTP.CheckRedirect}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	tok, err := p.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: p.tok.RefreshToken}).Token()
	if err != nil {
		return err
	}
	p.tok = tok
	p.save()
	return nil
}

// withResource adds resource=… to a refresh_token grant.
type withResource struct {
	base     http.RoundTripper
	resource string
}

func (w withResource) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return w.base.RoundTrip(req)
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(data))
	if err == nil && form.Get("grant_type") == "refresh_token" && form.Get("resource") == "" {
		form.Set("resource", w.resource)
		data = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.ContentLength = int64(len(data))
	return w.base.RoundTrip(r)
}
