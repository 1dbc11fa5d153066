package admin_test

import (
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/host"
)

// The admin listener of a host: the metrics' hook goes into the host's
// options before it starts, then the admin server follows the host.
func Example() {
	m := admin.NewMetrics()
	h, err := host.New(host.Config{}, host.Options{ServerOptions: m.ServerOptions})
	if err != nil {
		panic(err)
	}
	srv := admin.New(h, m, admin.Options{Title: "my host"})
	web := httptest.NewServer(srv.Handler()) // or http.Server on --admin's address
	defer func() { web.Close(); srv.Close(); _ = h.Close() }()

	res, err := web.Client().Get(web.URL + "/readyz")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.StatusCode, " ", string(body))
	// Output: 200 {"ready":true,"not_ready":[]}
}
