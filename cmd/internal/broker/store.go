package broker

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/cmd/internal/gcsflag"
	"github.com/nodeid/nodeid/cmd/internal/k8sflag"
	"github.com/nodeid/nodeid/cmd/internal/storeflag"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/gcsstore"
	"github.com/nodeid/nodeid/k8sstore"
	"github.com/nodeid/nodeid/lease"
	"github.com/nodeid/nodeid/s3store"
	"github.com/nodeid/nodeid/s3store/s3fake"
)

// checkStoreFlags checks --store, --prefix and the flags of the store --store
// names; no other store's flags may be given.
func (c *serveConfig) checkStoreFlags(f *envflag.Set) error {
	if err := etcdflag.CheckPrefix(f.Source("prefix"), c.prefix); err != nil {
		return err
	}
	s3 := storeflag.Family{Store: etcdflag.StoreS3, Flags: "the S3 flags (--bucket, --s3-endpoint, --embedded-s3)",
		Given: c.embeddedS3 != "" || c.s3Endpoint != "" || c.bucket != ""}
	return storeflag.Check(f.Source("store"), c.store, s3, c.etcd.Family(c.prefix), c.azblob.Family(c.prefix), c.gcs.Family(c.prefix), c.k8s.Family(c.prefix))
}

// storeName names the store in logs and gossip's default cluster identity:
// s3://BUCKET/PREFIX, etcd://ENDPOINTS/PREFIX,
// azblob://ACCOUNT-URL/CONTAINER/PREFIX, gs://BUCKET/PREFIX or
// k8s://SERVER/NAMESPACE/PREFIX.
func (c *serveConfig) storeName() string {
	switch c.store {
	case azblobflag.Store:
		return c.azblob.Name(c.prefix)
	case gcsflag.Store:
		return c.gcs.Name(c.prefix)
	case k8sflag.Store:
		return c.k8s.Name(c.prefix)
	case etcdflag.StoreEtcd:
		return "etcd://" + strings.Join(c.etcd.Config(c.prefix).Endpoints, ",") + "/" + c.prefix
	}
	return "s3://" + c.bucket + "/" + c.prefix
}

// storeWhere names the store for messages: the endpoint, or the bucket.
func (b *broker) storeWhere() string {
	switch {
	case b.cfg.store == azblobflag.Store:
		return fmt.Sprintf("%s (prefix %s)", b.cfg.azblob.Where(), b.cfg.prefix)
	case b.cfg.store == gcsflag.Store:
		return fmt.Sprintf("%s (prefix %s)", b.cfg.gcs.Where(), b.cfg.prefix)
	case b.cfg.store == k8sflag.Store:
		return fmt.Sprintf("%s (prefix %s)", b.cfg.k8s.Where(), b.cfg.prefix)
	case b.cfg.store == etcdflag.StoreEtcd:
		return fmt.Sprintf("etcd at --etcd-endpoints %s (prefix %s)", b.cfg.etcd.Endpoints, b.cfg.prefix)
	case b.cfg.embeddedS3 != "":
		return fmt.Sprintf("the embedded S3 on %s (bucket %s)", b.cfg.embeddedS3, b.cfg.bucket)
	case b.cfg.s3Endpoint != "":
		return fmt.Sprintf("the S3 store at --s3-endpoint %s (bucket %s)", b.cfg.s3Endpoint, b.cfg.bucket)
	}
	return fmt.Sprintf("AWS S3 bucket %s", b.cfg.bucket)
}

// openStore opens the store --store names. The returned function closes what
// the store holds: the embedded S3, the etcd connection (a no-op otherwise).
// again opens another client of the same store, on connections of its own
// (read mode's probe reads through it as another task would), with its own
// close function.
func (b *broker) openStore(ctx context.Context) (st lease.Store, closeStore func(), again func() (lease.Store, func(), error), err error) {
	switch b.cfg.store {
	case etcdflag.StoreEtcd:
		again = func() (lease.Store, func(), error) {
			st, err := etcdstore.New(b.cfg.etcd.Config(b.cfg.prefix))
			if err != nil {
				return nil, nil, err
			}
			return st, func() { _ = st.Close() }, nil
		}
	case azblobflag.Store:
		again = func() (lease.Store, func(), error) {
			// With neither a key nor a SAS: azblobflag.DefaultCredential.
			c, err := b.cfg.azblob.StoreConfig(b.cfg.prefix, nil)
			if err != nil {
				return nil, nil, err
			}
			c.Logger = b.log.With("component", "azblobstore")
			st, err := azblobstore.New(c)
			return st, func() {}, err
		}
	case gcsflag.Store:
		again = func() (lease.Store, func(), error) {
			c := b.cfg.gcs.Config(b.cfg.prefix)
			c.Logger = b.log.With("component", "gcsstore")
			st, err := gcsstore.New(c)
			return st, func() {}, err
		}
	case k8sflag.Store:
		again = func() (lease.Store, func(), error) {
			c, err := b.cfg.k8s.Config(b.cfg.prefix)
			if err != nil {
				return nil, nil, err
			}
			c.Logger = b.log.With("component", "k8sstore")
			// client-go logs through klog (to stderr by default): into the
			// broker's log instead.
			klog.SetSlogLogger(b.log.With("component", "client-go"))
			st, err := k8sstore.New(c)
			return st, func() {}, err
		}
	default:
		return b.openS3(ctx)
	}
	st, closeStore, err = again()
	return st, closeStore, again, err
}

// openS3 opens the S3 store, starting the embedded S3 if asked; the returned
// function stops it, and again opens another client of it.
func (b *broker) openS3(ctx context.Context) (lease.Store, func(), func() (lease.Store, func(), error), error) {
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Prefix, sc.Region = b.cfg.bucket, b.cfg.prefix, b.cfg.region
	sc.Endpoint, sc.UsePathStyle = b.cfg.s3Endpoint, b.cfg.s3PathStyle
	closeStore := func() {}
	if b.cfg.embeddedS3 != "" {
		srv, err := s3fake.Start(s3fake.Config{Addr: b.cfg.embeddedS3, Bucket: b.cfg.bucket, Logger: b.log.With("component", "embedded-s3")})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--embedded-s3 %s: %w", b.cfg.embeddedS3, err)
		}
		closeStore = func() { _ = srv.Close() }
		b.log.Info("embedded S3 listening", "endpoint", srv.URL(), "bucket", srv.Bucket(),
			"credentials", "any (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to anything in brokers that use it)")
		sc = srv.StoreConfig(b.cfg.prefix)
	}
	sc.Logger = b.log.With("component", "s3store")
	again := func() (lease.Store, func(), error) {
		st, err := s3store.New(ctx, sc)
		return st, func() {}, err
	}
	store, _, err := again()
	if err != nil {
		closeStore()
		return nil, nil, nil, storeflag.OpenError(err)
	}
	return store, closeStore, again, nil
}
