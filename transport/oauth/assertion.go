package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ClientKey is client authentication with a JWT signed by the client's
// own key (private_key_jwt: RFC 7523 §2.2, RFC 7521 §4.2) in place of a
// client secret. Each token request gets a new assertion: iss and sub the
// client id, aud the authorization server's issuer identifier, a new jti,
// and an expiry ClientAssertionLifetime ahead.
type ClientKey struct {
	// KeyFile is a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA),
	// read at each signature, so that a rotated key is picked up.
	KeyFile string
	// KeyPEM is the key itself, in place of KeyFile.
	KeyPEM []byte
	// KeyID is the JWS "kid" header (empty: none).
	KeyID string
	// Algorithm is the JWS algorithm (ES256, ES384, ES512, RS256, RS384,
	// RS512, PS256, PS384, PS512, EdDSA); empty: the key's own (ES256 for
	// a P-256 key, RS256 for RSA, EdDSA for Ed25519).
	Algorithm string
}

// ClientAssertionLifetime is how long a private_key_jwt assertion is
// valid: long enough for one token request, short enough that a copy is
// of little use.
const ClientAssertionLifetime = time.Minute

// ClientAssertionType is the client_assertion_type of private_key_jwt.
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// maxAssertionBytes bounds a key file, an assertion file or an ID token
// file: a PEM key or a JWT is a few KiB.
const maxAssertionBytes = 64 << 10

// Algorithms are the JWS algorithms a ClientKey may sign with.
var Algorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}

// CheckAlgorithm refuses a JWS algorithm a ClientKey cannot sign with
// (an unknown one, "none", or an HMAC one, which needs no private key).
func CheckAlgorithm(alg string) error {
	if alg == "" || slices.Contains(Algorithms, alg) {
		return nil
	}
	return fmt.Errorf("signing algorithm %q is not one of %s", alg, strings.Join(Algorithms, ", "))
}

// signer reads the key and returns it with the algorithm it signs with.
func (k *ClientKey) signer() (any, jwt.SigningMethod, error) {
	raw, name := k.KeyPEM, "the client key"
	if raw == nil {
		name = "the client key file " + k.KeyFile
		var err error
		if raw, err = readBounded(k.KeyFile); err != nil {
			return nil, nil, fmt.Errorf("reading the client key: %w", err)
		}
	}
	if err := CheckAlgorithm(k.Algorithm); err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, nil, fmt.Errorf("%s holds no PEM block", name)
	}
	if strings.Contains(block.Type, "ENCRYPTED") || block.Headers["Proc-Type"] != "" {
		return nil, nil, fmt.Errorf("%s is encrypted: give it unencrypted (mode 0600)", name)
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, nil, fmt.Errorf("%s holds a %q, not a private key", name, block.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	fits, own := keyAlgorithms(key)
	if own == "" {
		return nil, nil, fmt.Errorf("%s holds a %T, which cannot sign a JWT", name, key)
	}
	alg := k.Algorithm
	if alg == "" {
		alg = own
	}
	if !slices.Contains(fits, alg) {
		return nil, nil, fmt.Errorf("%s is %s: it signs %s, not %s", name, describeKey(key), strings.Join(fits, ", "), alg)
	}
	return key, jwt.GetSigningMethod(alg), nil
}

// keyAlgorithms are the algorithms key signs with, and its default.
func keyAlgorithms(key any) ([]string, string) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return []string{"ES256"}, "ES256"
		case elliptic.P384():
			return []string{"ES384"}, "ES384"
		case elliptic.P521():
			return []string{"ES512"}, "ES512"
		}
	case *rsa.PrivateKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}, "RS256"
	case ed25519.PrivateKey:
		return []string{"EdDSA"}, "EdDSA"
	}
	return nil, ""
}

func describeKey(key any) string {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		return "an EC " + k.Curve.Params().Name + " key"
	case *rsa.PrivateKey:
		return fmt.Sprintf("an RSA %d-bit key", k.N.BitLen())
	case ed25519.PrivateKey:
		return "an Ed25519 key"
	}
	return fmt.Sprintf("a %T", key)
}

// assertion signs a new client assertion for clientID, for the
// authorization server whose issuer identifier is aud.
func (k *ClientKey) assertion(clientID, aud string, now time.Time) (string, error) {
	key, method, err := k.signer()
	if err != nil {
		return "", err
	}
	tok := jwt.NewWithClaims(method, jwt.MapClaims{
		"iss": clientID, "sub": clientID, "aud": aud, "jti": rand.Text(),
		"iat": now.Unix(), "exp": now.Add(ClientAssertionLifetime).Unix(),
	})
	if k.KeyID != "" {
		tok.Header["kid"] = k.KeyID
	}
	s, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return s, nil
}

// AssertionSource returns a JWT that a grant presents (a workload's
// identity token, an enterprise identity provider's ID token). It is
// called at each sign-in and token renewal: such tokens are short-lived
// and rotated by whoever provides them.
type AssertionSource func(ctx context.Context) (string, error)

// AssertionFile reads the JWT from path at each call (a Kubernetes
// projected service account token, a file a workload identity agent
// keeps fresh), without surrounding white space.
func AssertionFile(path string) AssertionSource {
	return func(context.Context) (string, error) {
		b, err := readBounded(path)
		if err != nil {
			return "", err
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("the assertion file %s is empty", path)
		}
		return s, nil
	}
}

// AssertionEnv reads the JWT from the environment variable name at each
// call.
func AssertionEnv(name string) AssertionSource {
	return func(context.Context) (string, error) {
		s := strings.TrimSpace(os.Getenv(name))
		if s == "" {
			return "", fmt.Errorf("the environment variable %s that holds the assertion is empty or unset", name)
		}
		return s, nil
	}
}

// readBounded reads a file of at most maxAssertionBytes.
func readBounded(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no file given")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAssertionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxAssertionBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxAssertionBytes)
	}
	return b, nil
}
