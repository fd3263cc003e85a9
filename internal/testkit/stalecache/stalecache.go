// Package stalecache is an HTTP proxy in front of an S3 server that answers
// conditional reads from a cache, as a CDN or caching proxy in front of a
// store would: the store that keep-alive by reads must refuse (docs/evidence/design.md
// section 11), made from a correct one. lease.ProbeReads's tests put it
// between a store and its server.
package stalecache

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/nodeid/nodeid/internal/testkit/s3wire"
)

// Proxy is a running proxy.
type Proxy struct {
	srv *httptest.Server

	mu    sync.Mutex
	cache map[string]entry // by path: the last 200 a GetObject got
	hits  int
}

type entry struct {
	header http.Header
	body   []byte
}

// Start starts a proxy on a loopback port in front of the S3 server at
// target (a base URL, path style). Every request reaches the server except
// a GetObject with If-None-Match on a key whose last 200 answer the proxy
// keeps: that one is answered from it, 304 with the cached ETag when it is
// the one asked for, else the cached 200, whatever the server holds now.
// Writes pass through and leave the cache as it is.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{cache: map[string]entry{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // the signature covers Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if s3wire.Classify(resp.Request) != s3wire.OpGet || resp.StatusCode != http.StatusOK {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			p.mu.Lock()
			p.cache[resp.Request.URL.Path] = entry{header: resp.Header.Clone(), body: body}
			p.mu.Unlock()
			return nil
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inm := r.Header.Get("If-None-Match"); inm != "" && s3wire.Classify(r) == s3wire.OpGet && p.answer(w, r.URL.Path, inm) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	return p, nil
}

// answer answers a conditional read of path from the cache, and reports
// whether it could.
func (p *Proxy) answer(w http.ResponseWriter, path, inm string) bool {
	p.mu.Lock()
	e, ok := p.cache[path]
	if ok {
		p.hits++
	}
	p.mu.Unlock()
	if !ok {
		return false
	}
	for k, v := range e.header {
		w.Header()[k] = v
	}
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if e.header.Get("ETag") == inm {
		w.Header().Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(e.body)
	return true
}

// Hits returns how many conditional reads the proxy answered from its cache.
func (p *Proxy) Hits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

// URL returns the proxy's endpoint.
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }
