package serve

import "net"

// Loopback reports whether host:port addr binds loopback only: a loopback
// IP or "localhost" (an empty host binds every interface). The doors that
// have no authentication of their own bind only such addresses unless
// told otherwise.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
