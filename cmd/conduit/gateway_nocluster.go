//go:build !cluster

package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
)

// clusterState is empty: this build has no cluster member.
//
//lint:ignore U1000 the cluster build's clusterState has the member
type clusterState struct{}

// join runs conduit-cluster with this command's arguments, in place of
// this process, when --cluster is given (gateway_clusterflags.go says
// why).
func (cl *clusterFlags) join(host.Config, host.Options, *slog.Logger, *gateway.Options) (bool, error) {
	if err := cl.check(); err != nil || cl.name == "" {
		return false, err
	}
	path := clusterCommand
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), clusterCommand); fileExists(p) {
			path = p
		}
	}
	path, err := exec.LookPath(path)
	if err == nil && strings.HasSuffix(filepath.Base(os.Args[0]), ".test") {
		err = fmt.Errorf("not from a test binary") // its os.Args are the test's
	}
	if err == nil {
		err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	}
	return false, usagef("--cluster needs the %s command (conduit built with the cluster tag: go build -tags cluster -o %s ./cmd/conduit) beside conduit or on PATH: %v", clusterCommand, clusterCommand, err)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func (cl *clusterFlags) leave()                 {}
func (cl *clusterFlags) serve(*gateway.Gateway) {}
func (cl *clusterFlags) startDrain() func()     { return func() {} }

func (cl *clusterFlags) adminSource(g *gateway.Gateway) admin.Source { return g.Host() }
func (cl *clusterFlags) adminStats() func() admin.ClusterStats       { return nil }
func (cl *clusterFlags) settle(any) error                            { return nil }
func (cl *clusterFlags) describe() string                            { return "" }
