package broker

import (
	"github.com/nodeid/nodeid/azblobstore"
	"github.com/nodeid/nodeid/lease"
)

// openAzblob returns the Azure Blob store (--store azblob, the flags of
// azblobflag); it holds no connection to close.
func (b *broker) openAzblob() (lease.Store, func(), error) {
	c := b.cfg.azblob.Config(b.cfg.prefix)
	c.Logger = b.log.With("component", "azblobstore")
	st, err := azblobstore.New(c)
	if err != nil {
		return nil, nil, err
	}
	return st, func() {}, nil
}
