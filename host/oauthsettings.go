package host

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// PrivateKeyJWT is "privateKeyJwt": the client authenticates with a JWT
// signed by its own key (private_key_jwt) in place of a client secret.
type PrivateKeyJWT struct {
	// KeyFile ("keyFile") is the PEM private key, read at each sign-in.
	KeyFile string
	// KeyID ("keyId") is the JWS kid header; empty: none.
	KeyID string
	// Algorithm ("algorithm") is the JWS algorithm; empty: the key's own.
	Algorithm string
}

// JWTBearer is "jwtBearer": workload identity, the JWT bearer grant with
// the JWT the workload is given, read at each sign-in from a file
// ("assertionFile") or an environment variable ("assertionEnv").
type JWTBearer struct {
	AssertionFile string
	AssertionEnv  string
}

// EnterpriseIdP is "enterprise": enterprise-managed authorization. The ID
// token from the identity provider ("idTokenFile" or "idTokenEnv", read
// at each sign-in) is exchanged at its token endpoint ("idpTokenEndpoint",
// else discovered from "idpIssuer") by the client "idpClientId" (and
// "idpClientSecret") for an ID-JAG, presented to the MCP server's
// authorization server with the server's clientId and clientSecret (or
// privateKeyJwt).
type EnterpriseIdP struct {
	TokenEndpoint, Issuer  string
	ClientID, ClientSecret string
	IDTokenFile            string
	IDTokenEnv             string
}

// OAuthConfig is the sign-in the settings describe (without the resource
// and the store, which the caller gives).
func (o OAuthSettings) OAuthConfig() oauth.Config {
	c := oauth.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, ClientIDMetadataURL: o.ClientMetadataURL,
		ClientCredentials: o.ClientCredentials, DPoP: o.DPoP}
	if k := o.PrivateKeyJWT; k != nil {
		c.ClientKey = &oauth.ClientKey{KeyFile: k.KeyFile, KeyID: k.KeyID, Algorithm: k.Algorithm}
	}
	if j := o.JWTBearer; j != nil {
		c.WorkloadAssertion = assertionSource(j.AssertionFile, j.AssertionEnv)
	}
	if e := o.Enterprise; e != nil {
		c.Enterprise = &oauth.Enterprise{TokenEndpoint: e.TokenEndpoint, Issuer: e.Issuer, ClientID: e.ClientID,
			ClientSecret: e.ClientSecret, IDToken: assertionSource(e.IDTokenFile, e.IDTokenEnv)}
	}
	return c
}

func assertionSource(file, env string) oauth.AssertionSource {
	if file != "" {
		return oauth.AssertionFile(file)
	}
	return oauth.AssertionEnv(env)
}

// subObject reads key's object, field by field in key order: each field's
// reader returns false for a key it does not know (warned, ignored).
func (p *parser) subObject(key string, raw json.RawMessage, field func(sub, k string, v json.RawMessage) (bool, error)) error {
	var m map[string]json.RawMessage
	if err := p.object(key, raw, &m); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sub := key + "." + k
		known, err := field(sub, k, m[k])
		if err != nil {
			return err
		}
		if !known {
			p.warn(sub, "unknown key, ignored")
		}
	}
	return nil
}

func (p *parser) parsePrivateKeyJWT(key string, raw json.RawMessage) (*PrivateKeyJWT, error) {
	k := &PrivateKeyJWT{}
	err := p.subObject(key, raw, func(sub, name string, v json.RawMessage) (bool, error) {
		var err error
		switch name {
		case "keyFile":
			k.KeyFile, err = p.str(sub, v)
		case "keyId":
			k.KeyID, err = p.str(sub, v)
		case "algorithm":
			if k.Algorithm, err = p.str(sub, v); err == nil {
				if e := oauth.CheckAlgorithm(k.Algorithm); e != nil {
					err = p.fail(sub, "%v", e)
				}
			}
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && k.KeyFile == "" {
		err = p.fail(key, "want keyFile, the PEM private key")
	}
	return k, err
}

func (p *parser) parseJWTBearer(key string, raw json.RawMessage) (*JWTBearer, error) {
	j := &JWTBearer{}
	err := p.subObject(key, raw, func(sub, name string, v json.RawMessage) (bool, error) {
		var err error
		switch name {
		case "assertionFile":
			j.AssertionFile, err = p.str(sub, v)
		case "assertionEnv":
			j.AssertionEnv, err = p.str(sub, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && (j.AssertionFile == "") == (j.AssertionEnv == "") {
		err = p.fail(key, "want one of assertionFile and assertionEnv")
	}
	return j, err
}

func (p *parser) parseEnterprise(key string, raw json.RawMessage) (*EnterpriseIdP, error) {
	e := &EnterpriseIdP{}
	err := p.subObject(key, raw, func(sub, name string, v json.RawMessage) (bool, error) {
		var err error
		switch name {
		case "idpTokenEndpoint":
			e.TokenEndpoint, err = p.str(sub, v)
		case "idpIssuer":
			e.Issuer, err = p.str(sub, v)
		case "idpClientId":
			e.ClientID, err = p.str(sub, v)
		case "idpClientSecret":
			e.ClientSecret, err = p.str(sub, v)
		case "idTokenFile":
			e.IDTokenFile, err = p.str(sub, v)
		case "idTokenEnv":
			e.IDTokenEnv, err = p.str(sub, v)
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
	case e.TokenEndpoint == "" && e.Issuer == "":
		err = p.fail(key, "want idpTokenEndpoint or idpIssuer")
	case (e.IDTokenFile == "") == (e.IDTokenEnv == ""):
		err = p.fail(key, "want one of idTokenFile and idTokenEnv")
	}
	return e, err
}

// checkOAuth refuses settings that cannot sign in: two sign-ins without a
// person at once, or one without the client identity it needs.
func (p *parser) checkOAuth(key string, o OAuthSettings) error {
	var modes []string
	if o.ClientCredentials {
		modes = append(modes, "clientCredentials")
	}
	if o.JWTBearer != nil {
		modes = append(modes, "jwtBearer")
	}
	if o.Enterprise != nil {
		modes = append(modes, "enterprise")
	}
	switch {
	case len(modes) > 1:
		return p.fail(key, "give one of clientCredentials, jwtBearer and enterprise, not %v", modes)
	case o.PrivateKeyJWT != nil && o.ClientID == "":
		return p.fail(key, "privateKeyJwt needs clientId")
	case o.PrivateKeyJWT != nil && o.ClientSecret != "":
		return p.fail(key, "give clientSecret or privateKeyJwt, not both")
	case o.ClientCredentials && (o.ClientID == "" || o.ClientSecret == "" && o.PrivateKeyJWT == nil):
		return p.fail(key, "clientCredentials needs clientId with clientSecret or privateKeyJwt")
	}
	return nil
}
