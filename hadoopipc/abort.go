package hadoopipc

import "net"

// abort ends a connection of a server that stops with a TCP reset, not a
// clean close. A client whose connection is idle (between calls) learns
// of a clean close only after it wrote its next call into it, when the
// read of the answer finds the end of the stream: it cannot tell whether
// the call ran, and clients that retry only on what they know was not
// delivered give the call up (colinmarc/hdfs returns the EOF from any call
// that was written). A reset connection fails the client's write of the
// call itself, which such clients do retry, on the next namenode.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
