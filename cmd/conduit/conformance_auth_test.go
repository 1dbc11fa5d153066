package main

import (
	"context"
	"testing"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// Each machine sign-in scenario selects its grant, with the context's key,
// JWT or IdP in place of files; the other scenarios keep the code flow.
func TestConformanceAuthContext(t *testing.T) {
	c := conformanceAuthContext{PrivateKeyPEM: "PEM", SigningAlgorithm: "ES256", ValidJWT: "eyJ.wl",
		IdPClientID: "idp-c", IdPIDToken: "eyJ.id", IdPIssuer: "http://idp", IdPTokenEndpoint: "http://idp/token"}
	var cfg oauth.Config
	c.apply("auth/client-credentials-jwt", &cfg)
	if !cfg.ClientCredentials || cfg.ClientKey == nil || string(cfg.ClientKey.KeyPEM) != "PEM" || cfg.ClientKey.Algorithm != "ES256" {
		t.Fatalf("client-credentials-jwt: %+v", cfg)
	}
	cfg = oauth.Config{}
	c.apply("auth/wif-jwt-bearer", &cfg)
	if cfg.WorkloadAssertion == nil || cfg.ClientKey != nil || cfg.ClientCredentials {
		t.Fatalf("wif-jwt-bearer: %+v", cfg)
	}
	if a, err := cfg.WorkloadAssertion(context.Background()); err != nil || a != "eyJ.wl" {
		t.Fatalf("wif-jwt-bearer assertion: %q, %v", a, err)
	}
	cfg = oauth.Config{}
	c.apply("auth/enterprise-managed-authorization", &cfg)
	e := cfg.Enterprise
	if e == nil || e.TokenEndpoint != "http://idp/token" || e.Issuer != "http://idp" || e.ClientID != "idp-c" {
		t.Fatalf("enterprise-managed-authorization: %+v", cfg)
	}
	if tok, err := e.IDToken(context.Background()); err != nil || tok != "eyJ.id" {
		t.Fatalf("enterprise ID token: %q, %v", tok, err)
	}
	cfg = oauth.Config{}
	c.apply("auth/metadata-default", &cfg)
	if cfg.ClientKey != nil || cfg.WorkloadAssertion != nil || cfg.Enterprise != nil || cfg.ClientCredentials {
		t.Fatalf("metadata-default: %+v", cfg)
	}
}
