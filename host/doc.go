// Package host runs many MCP servers at once, each under its own
// supervisor: started from a configuration in the mcpServers format most
// hosts share, restarted with backoff when it exits or its connection is
// lost, parked when it fails too often, and offered as one catalog of
// namespaced tools. Import it to build an agent, IDE or gateway on Conduit
// that talks to several servers; use conduit.Client directly for one.
//
// See docs/supervision.md for the supervision tree and the restart policy.
package host
