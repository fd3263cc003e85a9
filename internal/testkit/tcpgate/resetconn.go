package tcpgate

import "net"

// ResetConn closes c with an RST rather than a FIN: the far end's next read
// or write fails with "connection reset by peer", as when a middlebox or a
// crashed host drops the connection.
func ResetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
