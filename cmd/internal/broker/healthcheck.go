package broker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nodeid/nodeid/cmd/internal/envflag"
)

// Exit codes of healthcheck. Docker reserves 2 in HEALTHCHECK
// commands, so a bad flag is 1 too.
const (
	healthy   = 0
	unhealthy = 1
)

const healthcheckHelp = `Usage: {prog} healthcheck [flags]

Exits 0 if the broker's GET /health answers 200, else 1 (printing why): for
an ECS container health check, ["CMD", "/{prog}", "healthcheck"], in an
image without curl. It reads NODEID_HTTP_ADDR like the broker it checks.

Flags:
`

// runHealthcheck is the healthcheck command of prog.
func runHealthcheck(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	name := prog + " healthcheck"
	f := envflag.New(name, os.LookupEnv)
	f.BindAll()
	addr := f.String("http-addr", ":8080", "address of the broker's HTTP server (the broker's --http-addr; an empty or wildcard host means 127.0.0.1)")
	timeout := f.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, helpText(healthcheckHelp, prog))
			f.PrintDefaultsTo(stdout)
			return healthy
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return unhealthy
	}
	target, err := localURL(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s %q: %v\n", name, f.Source("http-addr"), *addr, err)
		return unhealthy
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/health", nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return unhealthy
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "%s: unhealthy: %v\n", name, err)
		return unhealthy
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "%s: unhealthy: HTTP %d %s\n", name, resp.StatusCode, strings.TrimSpace(string(body)))
		return unhealthy
	}
	fmt.Fprintf(stdout, "healthy: %s\n", strings.TrimSpace(string(body)))
	return healthy
}

// localURL turns a listen address into the URL to reach it from the same
// host: an empty or wildcard host becomes the loopback address (":8080" ->
// "http://127.0.0.1:8080").
func localURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
