// Command etcd is the etcd server used by envtest: a thin wrapper around
// etcdmain.Main so that the binary is built from the Go module proxy, with no
// download of a prebuilt release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
