package k8sstore

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// DefaultPrefix is the Lease name prefix of [DefaultConfig]: node 7's Lease
// is "nodeid.7.json".
const DefaultPrefix = "nodeid."

// DefaultRequestTimeout is the RequestTimeout used when Config.RequestTimeout
// is zero.
const DefaultRequestTimeout = 5 * time.Second

// DefaultPageSize is the PageSize used when Config.PageSize is zero.
const DefaultPageSize = 500

// Config configures a [Store] made by [New]. Start from [DefaultConfig] and
// set Namespace and REST.
type Config struct {
	// REST is the client configuration: rest.InClusterConfig() in a pod,
	// or one built from a kubeconfig (clientcmd). Required. New copies it
	// and adds its own transport wrapper (to read the Date header); a QPS
	// of zero means no client-side rate limit (the apiserver's priority and
	// fairness still applies), as nodeid's writes are few and each must go
	// out when due.
	REST *rest.Config

	// Namespace holds the Leases. Required; it must exist. The identity
	// needs get, list, create and update on leases (coordination.k8s.io) in
	// it, and nothing else.
	Namespace string

	// Prefix starts every Lease name: key k is the Lease named after
	// Prefix+k (see the package doc for the mapping). DefaultConfig sets
	// "nodeid.". It must map to the start of a DNS subdomain.
	Prefix string

	// RequestTimeout bounds each request: one write, one read, one page of
	// a listing. Zero means DefaultRequestTimeout. Keep it well below the
	// lease renewal interval: a write that times out has an unknown outcome
	// and must be read back before the renew deadline.
	RequestTimeout time.Duration

	// PageSize is how many Leases one page of a listing asks for (limit).
	// Zero means DefaultPageSize.
	PageSize int

	// Logger receives debug lines. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the default prefix, request timeout
// and page size. Set REST and Namespace before use.
func DefaultConfig() Config {
	return Config{Prefix: DefaultPrefix, RequestTimeout: DefaultRequestTimeout, PageSize: DefaultPageSize}
}

// Validate reports the problems with c, or nil. [New] calls it.
func (c Config) Validate() error {
	var errs []string
	if c.REST == nil {
		errs = append(errs, "REST is required (rest.InClusterConfig, or a kubeconfig)")
	}
	if c.Namespace == "" {
		errs = append(errs, "Namespace is required")
	} else if e := validation.IsDNS1123Label(c.Namespace); len(e) > 0 {
		errs = append(errs, fmt.Sprintf("Namespace %q is not a namespace name: %s", c.Namespace, e[0]))
	}
	if err := checkPrefix(c.Prefix); err != nil {
		errs = append(errs, err.Error())
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Sprintf("RequestTimeout %v is negative", c.RequestTimeout))
	}
	if c.PageSize < 0 {
		errs = append(errs, fmt.Sprintf("PageSize %d is negative", c.PageSize))
	}
	if len(errs) > 0 {
		return errors.New("k8sstore: invalid config: " + strings.Join(errs, "; "))
	}
	return nil
}
