// Package loopback holds the one rule of Conduit's HTTP listeners (the
// gateway's and the admin listener's): without a bearer token they serve
// this machine only.
package loopback

import (
	"net"
	"strings"
)

// Is reports whether host, a name or an IP address without a port, is
// this machine: "localhost" or a loopback address.
func Is(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Host is the host of hostport (a request's Host header, with or without
// a port).
func Host(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Beyond says where addr, a host:port to listen on, reaches past this
// machine: "" for a loopback address, else its host ("every interface"
// for ":PORT"). The error is addr's when it is no host:port.
func Beyond(addr string) (string, error) {
	h, _, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return "", err
	case h == "":
		return "every interface", nil
	case Is(h):
		return "", nil
	}
	return h, nil
}
