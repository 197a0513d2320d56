package security

import (
	"context"
	"net"
	"strings"
)

// Origin is where a call came from, as the audit log records it: the
// protocol ("rpc", "webhdfs" or "http") and the caller's address.
type Origin struct {
	Proto string
	Addr  net.Addr
}

type originKey struct{}

// WithOrigin returns ctx carrying o. The HTTP authorizer sets it for every
// request it admits; gRPC calls carry their peer instead (OriginFromContext
// falls back to it).
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFromContext returns the origin WithOrigin placed, and whether there
// was one.
func OriginFromContext(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok
}

// httpOrigin is the origin of an HTTP request to route pattern from
// remote (http.Request.RemoteAddr): "webhdfs" for the WebHDFS routes,
// "http" for the rest.
func httpOrigin(pattern, remote string) Origin {
	proto := "http"
	if strings.Contains(pattern, "/webhdfs/") {
		proto = "webhdfs"
	}
	var addr net.Addr
	if ap, err := net.ResolveTCPAddr("tcp", remote); err == nil {
		addr = ap
	}
	return Origin{Proto: proto, Addr: addr}
}
