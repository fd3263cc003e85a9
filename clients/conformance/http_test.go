package conformance

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestHTTPVersionChange runs the driver in HTTP mode with a prefetch of
// 10000 through a proxy to broker-a; the driver is stopped (SIGSTOP) with
// prefetched IDs in hand, broker-a stops (SIGTERM, release), broker-b takes
// the node ID over with a new version, the proxy turns to broker-b, and the
// driver resumes (SIGCONT).
//
// With no max age for prefetched IDs ("no limit": a version change while
// the IDs in hand are younger than the max age, stretched by the stop) the
// client as it is reports the prefetched IDs with broker-a's version, then
// broker-b's IDs with broker-b's: every line is of a claim handed out and
// above its floor. One that reports the IDs in hand with the latest
// answer's version (mutation prefetch-latest-version) reports IDs of
// broker-a under broker-b's version, below its floor. With the default max
// age (1 s; "max age": the stop lasts longer) the IDs in hand are skipped:
// broker-b's IDs come next.
func TestHTTPVersionChange(t *testing.T) {
	t.Parallel()
	concurrently(t, map[string]func(*testing.T){
		"no limit": func(t *testing.T) { eachClient(t, func(t *testing.T, c *client) { httpVersionChange(newScene(t, c)) }) },
		"max age": func(t *testing.T) {
			eachClient(t, func(t *testing.T, c *client) { httpVersionChangeAged(newScene(t, c), "") })
		},
	})
}

func httpVersionChange(s *scene) { httpVersionChangeAged(s, "0") }

// httpVersionChangeAged is TestHTTPVersionChange with the driver's
// --prefetch-max-age-ms maxAge ("0": no limit; "": the default, 1000).
func httpVersionChangeAged(s *scene, maxAge string) {
	t := s.t
	flags := bucket(t)
	a := startBroker(t, "broker-a", nil, brokerArgs("serve", flags)...)
	s.brokers = append(s.brokers, a)
	a.waitLog("serving IDs", 30*time.Second)
	proxy := newSwitchProxy(t, a.addr)
	o := driverOpts{url: proxy.url, batch: 3, pauseMs: 1, prefetch: 10000, maxAge: maxAge}
	d := s.driver("driver", o)
	d.waitLines(30*time.Second, "50 ok lines", count(0, OK, "", 50))
	if err := d.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = d.Signal(syscall.SIGCONT)
		}
	}()
	s.logf("the driver is stopped with IDs of broker-a in hand")
	stopBroker(a)
	b := startBroker(t, "broker-b", nil, brokerArgs("serve", flags)...)
	s.brokers = append(s.brokers, b)
	b.waitLog("serving IDs", 30*time.Second)
	va, vb := a.claims()[0].Version, b.claims()[0].Version
	s.logf("broker-b serves version %d (broker-a's was %d)", vb, va)
	proxy.to(b.addr)
	if maxAge != "0" {
		// The IDs in hand were fetched before the stop: past the 1 s max age
		// once it lasts longer.
		time.Sleep(time.Until(stopped.Add(1500 * time.Millisecond)))
	}
	mark := d.nLines()
	if err := d.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	ofVersion := func(v int64, n int) func([]Line) bool {
		return func(ls []Line) bool {
			k := 0
			for _, l := range ls[min(mark, len(ls)):] {
				if l.Kind == OK && l.Version == v {
					k++
				}
			}
			return k >= n
		}
	}
	s.wait(d, 60*time.Second, "ok lines of broker-b's version", ofVersion(vb, 50))
	if maxAge == "0" {
		s.expect(ofVersion(va, 1)(d.out.all()), "no ok line of broker-a's version %d after the driver resumed: the prefetched IDs were not used", va)
	} else {
		// One call may have been under way, its IDs taken, when stopped.
		s.expect(!ofVersion(va, 2)(d.out.all()), "ok lines of broker-a's version %d after the driver resumed: the prefetched IDs older than the max age were used", va)
	}
	d.stop(10 * time.Second)
	stopBroker(b)
	s.add(d.stream(o, true))
	s.verdict()
}

// switchProxy is an HTTP reverse proxy on loopback whose target can be
// changed: the requests after to go to the new one.
type switchProxy struct {
	url    string // the proxy's base URL
	target atomic.Pointer[url.URL]
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	p := &switchProxy{}
	p.to(target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(p.target.Load()) }}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	p.url = "http://" + ln.Addr().String()
	return p
}

// to sends the later requests to addr.
func (p *switchProxy) to(addr string) { p.target.Store(&url.URL{Scheme: "http", Host: addr}) }

// TestRunChildHTTP runs the driver as nodeid-broker run's child in HTTP
// mode on the URL run gives it (--url-env: HttpGenerator with no URL reads
// NODEID_URL), with a prefetch: ok lines of the broker's claim.
func TestRunChildHTTP(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c *client) {
		s := newScene(t, c)
		o := driverOpts{urlEnv: true, prefetch: 1000, pauseMs: 1}
		a := startBroker(t, "broker+driver", c, append(brokerArgs("run", bucket(t)), childArgs(c, o)...)...)
		s.brokers = append(s.brokers, a)
		a.waitLines(60*time.Second, "500 ok lines", count(0, OK, "", 500))
		stopBroker(a)
		s.add(a.stream(o, true))
		s.verdict()
	})
}
