package admin

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// promHandler serves m's registry alone, without a host.
func promHandler(m *Metrics) http.Handler {
	return promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{})
}
