// Command etcd is the etcd server, at the version pinned by this module's
// go.mod, for nodeid's tests: test/etcd/install.sh builds it into the server
// cache (etcd's own go.mod has replace directives, so `go install
// go.etcd.io/etcd/server/v3@VERSION` refuses to build it).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
