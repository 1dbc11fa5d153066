package main

import (
	"context"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// conformanceAuthContext is what the suite's machine sign-in scenarios put
// in MCP_CONFORMANCE_CONTEXT besides client_id and client_secret: the
// client's key (auth/client-credentials-jwt), the workload's JWT
// (auth/wif-jwt-bearer), the identity provider and its ID token
// (auth/enterprise-managed-authorization).
type conformanceAuthContext struct {
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	ValidJWT         string `json:"valid_jwt"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

// apply selects the sign-in the scenario tests, as a server's oauth block
// would (privateKeyJwt, jwtBearer, enterprise), with the context's
// key and assertions in place of files.
func (c conformanceAuthContext) apply(scenario string, cfg *oauth.Config) {
	given := func(s string) oauth.AssertionSource {
		return func(context.Context) (string, error) { return s, nil }
	}
	switch scenario {
	case "auth/client-credentials-jwt":
		cfg.ClientCredentials = true
		cfg.ClientKey = &oauth.ClientKey{KeyPEM: []byte(c.PrivateKeyPEM), Algorithm: c.SigningAlgorithm}
	case "auth/wif-jwt-bearer":
		cfg.WorkloadAssertion = given(c.ValidJWT)
	case "auth/enterprise-managed-authorization":
		cfg.Enterprise = &oauth.Enterprise{TokenEndpoint: c.IdPTokenEndpoint, Issuer: c.IdPIssuer,
			ClientID: c.IdPClientID, IDToken: given(c.IdPIDToken)}
	}
}
