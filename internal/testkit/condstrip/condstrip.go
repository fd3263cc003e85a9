// Package condstrip is an HTTP proxy in front of an S3 server that drops the
// conditions of PUTs (If-None-Match, If-Match) before they reach it: the
// broken stores of issue 14 (older MinIO releases, GCS's XML API, Backblaze B2,
// some S3 proxies), which accept those headers and ignore them, made from a
// correct one. The store probe's black-box tests (nodeid-broker serve, nodeidctl
// check) point --s3-endpoint at it.
package condstrip

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"

	"github.com/nodeid/nodeid/internal/testkit/s3wire"
)

// Proxy is a running proxy.
type Proxy struct {
	srv *httptest.Server
}

// Start starts a proxy on a loopback port in front of the S3 server at target
// (a base URL, path style), dropping the headers named in drop (canonical or
// not: "If-None-Match", "If-Match") from every PUT on a key.
func Start(target string, drop ...string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host // the signature covers Host
		switch s3wire.Classify(r.In) {
		case s3wire.OpCreate, s3wire.OpUpdate:
			for _, h := range drop {
				r.Out.Header.Del(h)
			}
		}
	}}
	return &Proxy{srv: httptest.NewServer(rp)}, nil
}

// URL returns the proxy's endpoint, for --s3-endpoint.
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }
