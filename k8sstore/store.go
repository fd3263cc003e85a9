package k8sstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/nodeid/nodeid/internal/httpdate"
	"github.com/nodeid/nodeid/internal/netfail"
	"github.com/nodeid/nodeid/lease"
)

// The Lease's metadata that the store writes.
const (
	// RecordAnnotation holds the object's body, as it is (nodeid's records
	// are JSON).
	RecordAnnotation = "nodeid.io/record"
	// WriteAnnotation holds a random value new on every write, so that every
	// write changes the Lease: the apiserver skips an update that changes
	// nothing (the resourceVersion and the managedFields time would stay),
	// and a rewrite of an identical body must still renew.
	WriteAnnotation = "nodeid.io/write"
	// ManagedByLabel marks the Leases of nodeid, which List selects
	// (app.kubernetes.io/managed-by=nodeid).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "nodeid"
	// FieldManager is the field manager of the store's writes.
	FieldManager = "nodeid"
)

// maxBody bounds a body: annotations of one object hold at most 256 KiB.
const maxBody = 128 << 10

// Store is a [lease.Store] on Kubernetes Leases. It is safe for concurrent
// use.
type Store struct {
	rc        rest.Interface
	host      string
	namespace string
	prefix    string
	timeout   time.Duration
	pageSize  int64
	log       *slog.Logger
}

var (
	_ lease.Store             = (*Store)(nil)
	_ lease.Scoper            = (*Store)(nil)
	_ lease.Checker           = (*Store)(nil)
	_ lease.Describer         = (*Store)(nil)
	_ lease.ConditionalReader = (*Store)(nil)
)

// New returns a Store as cfg says. It sends no request: call [Store.Check].
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	rc := rest.CopyConfig(cfg.REST)
	if rc.QPS == 0 {
		rc.QPS = -1
	}
	rc.WrapTransport = transport.Wrappers(rc.WrapTransport, func(rt http.RoundTripper) http.RoundTripper { return httpdate.Transport{Base: rt} })
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("k8sstore: client for %s: %w", cfg.REST.Host, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{rc: cs.CoordinationV1().RESTClient(), host: rc.Host, namespace: cfg.Namespace, prefix: cfg.Prefix,
		timeout: cfg.RequestTimeout, pageSize: int64(cfg.PageSize), log: log.WithGroup("k8sstore")}, nil
}

// Scope implements [lease.Scoper]: a Store over the keys under prefix+sub,
// on the same client.
func (s *Store) Scope(sub string) lease.Store {
	c := *s
	c.prefix = s.prefix + sub
	return &c
}

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Describe implements [lease.Describer].
func (s *Store) Describe() string {
	return fmt.Sprintf("Kubernetes Leases at %s (namespace %q, prefix %q)", s.host, s.namespace, s.prefix)
}

// Check implements [lease.Checker]: one page of one Lease of the listing.
// It fails when the apiserver cannot be reached, refuses the credentials,
// or the identity may not list Leases in the namespace.
func (s *Store) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	var l coordinationv1.LeaseList
	err := s.leases().VersionedParams(&metav1.ListOptions{LabelSelector: selector(), Limit: 1}, scheme.ParameterCodec).Do(ctx).Into(&l)
	if err != nil {
		return s.readError("list", "", err, x)
	}
	return nil
}

func (s *Store) leases() *rest.Request {
	return s.rc.Get().Namespace(s.namespace).Resource("leases")
}

func selector() string { return ManagedByLabel + "=" + managedBy }

// name returns key's Lease name.
func (s *Store) name(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: the empty key", errName)
	}
	return nameOf(s.prefix + key)
}

// Get implements [lease.Store]: a GET of the Lease, a read from etcd with a
// quorum (no resourceVersion: the most recent).
func (s *Store) Get(ctx context.Context, key string) ([]byte, lease.Meta, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, lease.Meta{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	var l coordinationv1.Lease
	if err := s.leases().Name(name).Do(ctx).Into(&l); err != nil {
		if apierrors.IsNotFound(err) && isLeaseNotFound(err) {
			return nil, lease.Meta{}, fmt.Errorf("k8sstore: get %s: %w", key, lease.ErrNotFound)
		}
		return nil, lease.Meta{}, s.readError("get", key, err, x)
	}
	_, date := x.Dates()
	return bodyOf(key, &l, date)
}

// isLeaseNotFound tells a missing Lease from a missing namespace (which a
// GET of a Lease does not report: it answers that the Lease is not found).
func isLeaseNotFound(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return true
	}
	return se.Status().Details.Kind != "namespaces"
}

// bodyOf returns a Lease's body and Meta, or a *lease.BodyError matching
// lease.ErrCorrupt for a Lease that holds no body of nodeid's.
func bodyOf(key string, l *coordinationv1.Lease, date time.Time) ([]byte, lease.Meta, error) {
	m := metaOf(l, date)
	body, ok := l.Annotations[RecordAnnotation]
	if !ok {
		return nil, m, &lease.BodyError{Meta: m, Err: fmt.Errorf("%w: k8sstore: Lease %s (key %s) has no %s annotation: it is not nodeid's; delete or rename it",
			lease.ErrCorrupt, l.Name, key, RecordAnnotation)}
	}
	return []byte(body), m, nil
}

// metaOf returns a Lease's Meta: its resourceVersion, and as LastModified
// the latest time of its managedFields (set by the apiserver, in whole
// seconds, on every write that changes a field of that manager).
func metaOf(l *coordinationv1.Lease, date time.Time) lease.Meta {
	return lease.Meta{ETag: etagOf(l), LastModified: lastModified(l), Date: date}
}

func lastModified(l *coordinationv1.Lease) time.Time {
	var t time.Time
	for _, mf := range l.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.UTC()
		}
	}
	return t
}

// GetIfChanged implements [lease.ConditionalReader] with Get, compared here:
// the Lease API has no conditional read, but a GET without a
// resourceVersion is a quorum read of etcd, answered after the request
// arrived, so the resourceVersion it shows was current then. A Lease whose
// resourceVersion is etag gives lease.ErrNotModified with its Meta; the body
// still crossed the wire.
func (s *Store) GetIfChanged(ctx context.Context, key, etag string) ([]byte, lease.Meta, error) {
	body, m, err := s.Get(ctx, key)
	if err != nil || etag == "" || m.ETag != etag {
		return body, m, err
	}
	return nil, m, fmt.Errorf("k8sstore: get %s: %w (ETag %s)", key, lease.ErrNotModified, etag)
}

// lease returns the Lease that holds body at name, for a write.
func (s *Store) lease(name string, body []byte) (*coordinationv1.Lease, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("k8sstore: the body is not UTF-8 (an annotation holds text)")
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("k8sstore: the body is %d bytes, at most %d fit an annotation", len(body), maxBody)
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.namespace,
			Labels:      map[string]string{ManagedByLabel: managedBy},
			Annotations: map[string]string{RecordAnnotation: string(body), WriteAnnotation: hex.EncodeToString(nonce)},
		},
	}, nil
}

// Create implements [lease.Store]: a POST of the Lease (AlreadyExists:
// lease.ErrPreconditionFailed).
func (s *Store) Create(ctx context.Context, key string, body []byte) (lease.Meta, error) {
	name, err := s.name(key)
	if err != nil {
		return lease.Meta{}, err
	}
	obj, err := s.lease(name, body)
	if err != nil {
		return lease.Meta{}, err
	}
	return s.write(ctx, "create", key, func(r *rest.Request) *rest.Request {
		return r.Verb(http.MethodPost).VersionedParams(&metav1.CreateOptions{FieldManager: FieldManager}, scheme.ParameterCodec).Body(obj)
	})
}

// Update implements [lease.Store]: a PUT of the Lease with the
// resourceVersion and UID that etag names, both preconditions of the
// apiserver (409 Conflict when either differs: lease.ErrPreconditionFailed).
// The UID matters: the Lease API allows create on update, so a PUT of a
// missing Lease would create it whatever resourceVersion it named, but the
// apiserver checks a UID precondition first, against no object. An etag
// that is not of this store's form matches nothing: it gives
// lease.ErrPreconditionFailed without a request (a PUT without a
// resourceVersion would be unconditional).
func (s *Store) Update(ctx context.Context, key string, body []byte, etag string) (lease.Meta, error) {
	name, err := s.name(key)
	if err != nil {
		return lease.Meta{}, err
	}
	rv, uid, ok := parseETag(etag)
	if !ok {
		return lease.Meta{}, fmt.Errorf("k8sstore: update %s: %w (ETag %q is not resourceVersion/uid)", key, lease.ErrPreconditionFailed, etag)
	}
	obj, err := s.lease(name, body)
	if err != nil {
		return lease.Meta{}, err
	}
	obj.ResourceVersion, obj.UID = rv, types.UID(uid)
	return s.write(ctx, "update", key, func(r *rest.Request) *rest.Request {
		return r.Verb(http.MethodPut).Name(name).VersionedParams(&metav1.UpdateOptions{FieldManager: FieldManager}, scheme.ParameterCodec).Body(obj)
	})
}

// etagOf returns a Lease's ETag: resourceVersion/uid.
func etagOf(l *coordinationv1.Lease) string {
	if l.ResourceVersion == "" || l.UID == "" {
		return ""
	}
	return l.ResourceVersion + "/" + string(l.UID)
}

// parseETag returns the resourceVersion and UID of an ETag of etagOf's
// form, and false for any other string.
func parseETag(etag string) (rv, uid string, ok bool) {
	rv, uid, ok = strings.Cut(etag, "/")
	if !ok || rv == "" || len(rv) > 20 || strings.Trim(rv, "0123456789") != "" || uid == "" || len(uid) > 64 || strings.Contains(uid, "/") {
		return "", "", false
	}
	return rv, uid, true
}

// write sends one write, never retried by the client (MaxRetries 0: a
// retried create or update whose first attempt landed would answer
// AlreadyExists or Conflict, a lost race to the caller), and classifies its
// answer.
func (s *Store) write(ctx context.Context, op, key string, request func(*rest.Request) *rest.Request) (lease.Meta, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, x := httpdate.WithExchange(ctx)
	r := request(s.leases()).MaxRetries(0)
	var got coordinationv1.Lease
	if err := r.Do(ctx).Into(&got); err != nil {
		return lease.Meta{}, s.writeError(op, key, err, x)
	}
	_, date := x.Dates()
	m := metaOf(&got, date)
	if m.ETag == "" {
		return lease.Meta{}, &lease.UnknownOutcomeError{Op: op, Key: key, Err: errors.New("k8sstore: the answer has no resourceVersion")}
	}
	s.log.Debug("wrote", "op", op, "key", key, "resourceVersion", m.ETag)
	return m, nil
}

// List implements [lease.Store]: the Leases labelled app.kubernetes.io/
// managed-by=nodeid whose names start with the prefix's, page by page
// (limit and continue, so every page is read at the resourceVersion of the
// first), sorted by key. Listing.Date is the earliest Date of the pages.
func (s *Store) List(ctx context.Context) (lease.Listing, error) {
	var l lease.Listing
	ctx, x := httpdate.WithExchange(ctx)
	start := encode(s.prefix)
	cont := ""
	for {
		page, err := s.page(ctx, cont, x)
		if err != nil {
			return lease.Listing{}, err
		}
		for i := range page.Items {
			it := &page.Items[i]
			tail, ok := strings.CutPrefix(it.Name, start)
			if !ok {
				continue
			}
			key, ok := decode(tail)
			if !ok || key == "" {
				continue // not a name this store writes
			}
			l.Objects = append(l.Objects, lease.ObjectInfo{Key: key, ETag: etagOf(it), LastModified: lastModified(it),
				Size: int64(len(it.Annotations[RecordAnnotation]))})
		}
		if cont = page.Continue; cont == "" {
			break
		}
	}
	l.Date, _ = x.Dates()
	if err := l.SortByKey(); err != nil {
		return lease.Listing{}, fmt.Errorf("k8sstore: list: %w", err)
	}
	return l, nil
}

func (s *Store) page(ctx context.Context, cont string, x *httpdate.Exchange) (*coordinationv1.LeaseList, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var page coordinationv1.LeaseList
	opts := &metav1.ListOptions{LabelSelector: selector(), Limit: s.pageSize, Continue: cont}
	if err := s.leases().VersionedParams(opts, scheme.ParameterCodec).Do(ctx).Into(&page); err != nil {
		return nil, s.readError("list", "", err, x)
	}
	return &page, nil
}

// writeError classifies the error of a write:
//   - AlreadyExists (create), Conflict (update on another resourceVersion
//     or UID, or of a missing Lease): lease.ErrPreconditionFailed, not
//     written;
//   - no answer although the request may have left (a timeout, a reset
//     connection, a context that ended in flight), a 5xx, 429, or an answer
//     that did not decode: *lease.UnknownOutcomeError;
//   - the rest (401, 403, 400, 422, a request that never left): an error
//     that says what to fix, not written.
func (s *Store) writeError(op, key string, err error, x *httpdate.Exchange) error {
	code := statusCode(err)
	switch {
	case apierrors.IsAlreadyExists(err) && op == "create",
		apierrors.IsConflict(err) && op == "update":
		return fmt.Errorf("k8sstore: %s %s: %w (%s)", op, key, lease.ErrPreconditionFailed, apierrors.ReasonForError(err))
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err, ServerError: true}
	case code == 0 && x.WasSent() && !netfail.NotSent(err) && !isStatus(err):
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	case code >= 200 && code < 300:
		return &lease.UnknownOutcomeError{Op: op, Key: key, Err: err}
	}
	return s.describe(op, key, err)
}

// readError describes the error of a read.
func (s *Store) readError(op, key string, err error, _ *httpdate.Exchange) error {
	return s.describe(op, key, err)
}

func statusCode(err error) int {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return int(se.Status().Code)
	}
	return 0
}

func isStatus(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se)
}

// verbs is the least privilege, as the errors name it.
const verbs = "get, list, create and update on leases (coordination.k8s.io)"

// describe turns an error into one line that says what to fix, keeping the
// client's error in the chain; a configuration error matches
// lease.ErrMisconfigured.
func (s *Store) describe(op, key string, err error) error {
	what := op + " leases"
	if key != "" {
		what = fmt.Sprintf("%s lease %s", op, key)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("k8sstore: %s in namespace %q at %s: %s: %w", what, s.namespace, s.host, fmt.Sprintf(format, args...), err)
	}
	definite := func(format string, args ...any) error { return lease.Misconfigured(fail(format, args...)) }
	switch {
	case apierrors.IsForbidden(err):
		return definite("forbidden: bind this identity a Role of namespace %q that grants %s", s.namespace, verbs)
	case apierrors.IsUnauthorized(err):
		return definite("the apiserver refused the credentials: check the service account token or the kubeconfig")
	case apierrors.IsNotFound(err):
		return definite("namespace %q does not exist: create it, or fix the namespace", s.namespace)
	case isStatus(err):
		return fail("the apiserver refused the request (HTTP %d %s)", statusCode(err), apierrors.ReasonForError(err))
	}
	ep := netfail.Endpoint{URL: s.host, Holding: fmt.Sprintf("namespace %q", s.namespace), Setting: "the kubeconfig's server", Timeout: s.timeout}
	if msg, def, ok := ep.Describe(err); ok && def {
		return definite("%s", msg)
	} else if ok {
		return fail("%s", msg)
	}
	return fmt.Errorf("k8sstore: %s in namespace %q at %s: %w", what, s.namespace, s.host, err)
}
