package broker

import (
	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// openAzblob returns the Azure Blob store (--store azblob, the flags of
// azblobflag, with azblobflag.DefaultCredential when they name neither a key
// nor a SAS); it holds no connection to close.
func (b *broker) openAzblob() (lease.Store, func(), error) {
	c, err := b.cfg.azblob.StoreConfig(b.cfg.prefix, nil)
	if err != nil {
		return nil, nil, err
	}
	c.Logger = b.log.With("component", "azblobstore")
	st, err := azblobstore.New(c)
	if err != nil {
		return nil, nil, err
	}
	return st, func() {}, nil
}
