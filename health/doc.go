// Package health serves a component's health over HTTP: /health and /ready
// for load balancers and container health checks.
//
// It is an adapter, and imports nothing of nodeid: anything with a
// Check() error method is a Checker. A *nodeid.Claim is one (nil while the
// lease is held and not fenced), and so is a *gossip.Gate (nil once peers have
// seen a new version, or its timeout has passed). A broker serves
//
//	mux.Handle("/health", health.Handler("health", claim))
//	mux.Handle("/ready", health.Handler("ready", health.All(claim, gate)))
//
// A handler answers GET and HEAD with 200 and {"status":"ok"}, or 503 and
// {"status":"unavailable","reason":"..."}, as JSON that must not be cached.
// It runs the checker on every request: checkers must be fast and safe for
// concurrent use.
package health
