package broker

import (
	"strings"

	"github.com/nodeid/nodeid/cmd/internal/azblobflag"
	"github.com/nodeid/nodeid/cmd/internal/envflag"
	"github.com/nodeid/nodeid/cmd/internal/etcdflag"
	"github.com/nodeid/nodeid/etcdstore"
	"github.com/nodeid/nodeid/lease"
)

// checkStoreFlags checks --store, --prefix and the flags of the store --store
// names.
func (c *serveConfig) checkStoreFlags(f *envflag.Set) error {
	if err := etcdflag.CheckPrefix(f.Source("prefix"), c.prefix); err != nil {
		return err
	}
	s3Set := c.embeddedS3 != "" || c.s3Endpoint != "" || c.bucket != ""
	switch c.store {
	case azblobflag.Store:
		return c.azblob.Check(s3Set, c.etcd.Endpoints != "", c.prefix)
	case etcdflag.StoreS3, etcdflag.StoreEtcd:
		if c.azblob.Set() {
			return envflag.Usagef("the --azblob-* flags need --store azblob")
		}
		return c.etcd.Check(c.store, f.Source("store"), s3Set, c.prefix)
	}
	return envflag.Usagef("%s %q: want s3, etcd or azblob", f.Source("store"), c.store)
}

// storeName names the store in logs and gossip's default cluster identity:
// s3://BUCKET/PREFIX, etcd://ENDPOINTS/PREFIX or
// azblob://ACCOUNT-URL/CONTAINER/PREFIX.
func (c *serveConfig) storeName() string {
	if c.store == azblobflag.Store {
		return c.azblob.Name(c.prefix)
	}
	if c.store == etcdflag.StoreEtcd {
		return "etcd://" + strings.Join(c.etcd.Config(c.prefix).Endpoints, ",") + "/" + c.prefix
	}
	return "s3://" + c.bucket + "/" + c.prefix
}

// openEtcd connects to etcd; the returned function closes the connection.
func (b *broker) openEtcd() (lease.Store, func(), error) {
	st, err := etcdstore.New(b.cfg.etcd.Config(b.cfg.prefix))
	if err != nil {
		return nil, nil, err
	}
	return st, func() { _ = st.Close() }, nil
}
