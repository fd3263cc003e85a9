// Package freeport finds a loopback port for a gossip member (which binds TCP
// and UDP) that a test starts later, once something has tried to reach it.
package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TCPAndUDP returns a port of 127.0.0.1 free for both TCP and UDP at this
// instant, failing the test when ten tries found none.
func TCPAndUDP(t testing.TB) int {
	t.Helper()
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0
}
