package hadoopipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
)

// conn is one client connection.
type conn struct {
	s    *Server
	nc   net.Conn
	user string

	wmu  sync.Mutex // one response frame at a time
	wbuf []byte
}

// httpReply answers an HTTP request sent to the IPC port, as Hadoop does.
const httpReply = "HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\n" +
	"It looks like you are making an HTTP request to a Hadoop IPC port. " +
	"This is not the correct port for the web interface on this daemon.\r\n"

func (s *Server) serveConn(nc net.Conn) {
	c := &conn{s: s, nc: nc}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if err := c.handshake(); err != nil {
		s.cfg.Metrics.refused.WithLabelValues(refusalReason(err)).Inc()
		s.cfg.Log.Debug("hadoopipc: connection refused", "remote", nc.RemoteAddr(), "err", err)
		return
	}
	var calls sync.WaitGroup
	defer calls.Wait()
	sem := make(chan struct{}, s.cfg.MaxInFlight)
	var buf []byte
	for {
		nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		frame, err := readFrame(nc, buf, s.cfg.MaxFrame)
		if err != nil {
			if errors.Is(err, errFrame) {
				c.fatal(-1, hadoopcommon.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, IPCException, err.Error())
				s.cfg.Metrics.refused.WithLabelValues("bad_frame").Inc()
			}
			return
		}
		hdr, rest, err := parseRequestHeader(frame)
		if err != nil {
			c.fatal(-1, hadoopcommon.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST, IPCException, err.Error())
			s.cfg.Metrics.refused.WithLabelValues("bad_header").Inc()
			return
		}
		switch id := hdr.GetCallId(); {
		case id == callPing:
			continue
		case id < 0:
			c.fatal(id, hadoopcommon.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, IPCException,
				fmt.Sprintf("call id %d is not a call here", id))
			return
		}
		call, err := c.parseCall(hdr, rest)
		if err == nil && !s.cfg.Handler.Known(call.Method) {
			err = &Exception{Class: NoSuchMethod, Message: fmt.Sprintf("Unknown method %s called on %s protocol.", call.Method, s.cfg.Protocol)}
		}
		if err != nil {
			s.cfg.Metrics.observe("unknown", err, 0)
			c.fail(hdr, err)
			continue
		}
		// The frame buffer is the call's until it returns.
		buf = nil
		sem <- struct{}{}
		calls.Add(1)
		go func() {
			defer calls.Done()
			defer func() { <-sem }()
			c.run(ctx, hdr, call)
		}()
	}
}

// handshake reads the connection header and the connection context.
func (c *conn) handshake() error {
	cfg := c.s.cfg
	c.nc.SetReadDeadline(time.Now().Add(cfg.HandshakeTimeout))
	var h [headerBytes]byte
	if _, err := io.ReadFull(c.nc, h[:]); err != nil {
		return fmt.Errorf("connection header: %w", err)
	}
	switch {
	case bytes.HasPrefix(h[:], []byte("GET ")), bytes.HasPrefix(h[:], []byte("POST ")), bytes.HasPrefix(h[:], []byte("PUT ")):
		c.nc.Write([]byte(httpReply))
		return errors.New("an HTTP request on the IPC port")
	case string(h[:4]) != magic:
		return fmt.Errorf("bad magic %q", h[:4])
	case h[4] != rpcVersion:
		c.fatal(-1, hadoopcommon.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH, "org.apache.hadoop.ipc.RPC$VersionMismatch",
			fmt.Sprintf("Server IPC version %d cannot communicate with client version %d", rpcVersion, h[4]))
		return fmt.Errorf("client IPC version %d", h[4])
	case h[6] == authSASL:
		c.fatal(callSASL, hadoopcommon.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, AccessControl,
			"SASL authentication (Kerberos or tokens) is not enabled on this server: it serves simple authentication only")
		return errors.New("SASL requested")
	case h[6] != authNone:
		c.fatal(-1, hadoopcommon.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, AccessControl,
			fmt.Sprintf("unknown auth protocol %#x", h[6]))
		return fmt.Errorf("auth protocol %#x", h[6])
	}
	frame, err := readFrame(c.nc, nil, min(cfg.MaxFrame, 64<<10))
	if err != nil {
		return fmt.Errorf("connection context: %w", err)
	}
	hdr, rest, err := parseRequestHeader(frame)
	if err != nil || hdr.GetCallId() != callConnectionContext {
		c.fatal(hdr.GetCallId(), hadoopcommon.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, IPCException,
			"the first call of a connection must be its connection context (call id -3)")
		return fmt.Errorf("no connection context: %v", err)
	}
	msg, _, err := nextMessage(rest)
	var cc hadoopcommon.IpcConnectionContextProto
	if err == nil {
		err = proto.Unmarshal(msg, &cc)
	}
	if err != nil {
		c.fatal(callConnectionContext, hadoopcommon.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST, IPCException, "connection context: "+err.Error())
		return err
	}
	user, real := cc.GetUserInfo().GetEffectiveUser(), cc.GetUserInfo().GetRealUser()
	switch {
	case user == "":
		err = errors.New("the connection context names no user (userInfo.effectiveUser)")
	case real != "" && real != user:
		err = fmt.Errorf("user %q acting for %q: proxy users are not supported", real, user)
	case cc.Protocol != nil && cc.GetProtocol() != cfg.Protocol:
		c.fatal(callConnectionContext, hadoopcommon.RpcResponseHeaderProto_FATAL_UNKNOWN, NoSuchProtocol,
			fmt.Sprintf("Unknown protocol: %s", cc.GetProtocol()))
		return fmt.Errorf("protocol %q", cc.GetProtocol())
	}
	if err != nil {
		c.fatal(callConnectionContext, hadoopcommon.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, AccessControl, err.Error())
		return err
	}
	c.user = user
	return nil
}

func parseRequestHeader(frame []byte) (*hadoopcommon.RpcRequestHeaderProto, []byte, error) {
	msg, rest, err := nextMessage(frame)
	if err != nil {
		return nil, nil, err
	}
	hdr := &hadoopcommon.RpcRequestHeaderProto{}
	if err := proto.Unmarshal(msg, hdr); err != nil {
		return nil, nil, fmt.Errorf("RpcRequestHeaderProto: %w", err)
	}
	if hdr.CallId == nil {
		return nil, nil, errors.New("RpcRequestHeaderProto without a call id")
	}
	if k := hdr.GetRpcKind(); hdr.RpcKind != nil && k != hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER {
		return nil, nil, fmt.Errorf("rpc kind %v: only protocol buffers are served", k)
	}
	return hdr, rest, nil
}

// parseCall reads the RequestHeaderProto and the request of a call frame.
func (c *conn) parseCall(hdr *hadoopcommon.RpcRequestHeaderProto, rest []byte) (*Call, error) {
	msg, rest, err := nextMessage(rest)
	var rh hadoopcommon.RequestHeaderProto
	if err == nil {
		err = proto.Unmarshal(msg, &rh)
	}
	if err != nil {
		return nil, &Exception{Class: ServerError, Message: "RequestHeaderProto: " + err.Error()}
	}
	if rh.GetDeclaringClassProtocolName() != c.s.cfg.Protocol {
		return nil, &Exception{Class: NoSuchProtocol, Message: "Unknown protocol: " + rh.GetDeclaringClassProtocolName()}
	}
	body, rest, err := nextMessage(rest)
	if err != nil {
		body = nil // a request message may be absent: empty
	} else if len(rest) != 0 {
		return nil, &Exception{Class: ServerError, Message: "bytes after the request message"}
	}
	return &Call{
		Method: rh.GetMethodName(), Body: body, User: c.user,
		ClientID: hdr.GetClientId(), CallID: hdr.GetCallId(), Retry: max(hdr.GetRetryCount(), 0),
		Remote: c.nc.RemoteAddr(),
	}, nil
}

// run serves one call and writes its response.
func (c *conn) run(ctx context.Context, hdr *hadoopcommon.RpcRequestHeaderProto, call *Call) {
	m := c.s.cfg.Metrics
	start := time.Now()
	resp, err := c.s.cfg.Handler.Serve(ctx, call)
	m.observe(call.Method, err, time.Since(start))
	if err != nil {
		c.fail(hdr, err)
		return
	}
	c.respond(&hadoopcommon.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(hdr.GetCallId())), Status: hadoopcommon.RpcResponseHeaderProto_SUCCESS.Enum(),
		ServerIpcVersionNum: proto.Uint32(rpcVersion), ClientId: hdr.GetClientId(), RetryCount: hdr.RetryCount,
	}, resp)
}

// fail answers a call with an ERROR response; the connection goes on.
func (c *conn) fail(hdr *hadoopcommon.RpcRequestHeaderProto, err error) {
	class, msg := c.classify(err)
	detail := hadoopcommon.RpcResponseHeaderProto_ERROR_APPLICATION
	switch class {
	case NoSuchMethod:
		detail = hadoopcommon.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD
	case NoSuchProtocol:
		detail = hadoopcommon.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL
	case ServerError:
		detail = hadoopcommon.RpcResponseHeaderProto_ERROR_RPC_SERVER
	}
	c.respond(&hadoopcommon.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(hdr.GetCallId())), Status: hadoopcommon.RpcResponseHeaderProto_ERROR.Enum(),
		ServerIpcVersionNum: proto.Uint32(rpcVersion), ExceptionClassName: proto.String(class),
		ErrorMsg: proto.String(msg), ErrorDetail: detail.Enum(), ClientId: hdr.GetClientId(), RetryCount: hdr.RetryCount,
	}, nil)
}

func (c *conn) classify(err error) (class, msg string) {
	var e *Exception
	if errors.As(err, &e) {
		return e.Class, e.Message
	}
	if c.s.cfg.Exception != nil {
		return c.s.cfg.Exception(err)
	}
	return ServerError, err.Error()
}

// fatal writes a FATAL response; the caller then closes the connection.
func (c *conn) fatal(callID int32, code hadoopcommon.RpcResponseHeaderProto_RpcErrorCodeProto, class, msg string) {
	c.respond(&hadoopcommon.RpcResponseHeaderProto{
		CallId: proto.Uint32(uint32(callID)), Status: hadoopcommon.RpcResponseHeaderProto_FATAL.Enum(),
		ServerIpcVersionNum: proto.Uint32(rpcVersion), ExceptionClassName: proto.String(class),
		ErrorMsg: proto.String(msg), ErrorDetail: code.Enum(),
	}, nil)
}

func (c *conn) respond(hdr *hadoopcommon.RpcResponseHeaderProto, resp proto.Message) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b, err := appendFrame(c.wbuf[:0], hdr, resp)
	if err != nil {
		c.s.cfg.Log.Error("hadoopipc: marshal response", "err", err)
		b, _ = appendFrame(c.wbuf[:0], &hadoopcommon.RpcResponseHeaderProto{
			CallId: hdr.CallId, Status: hadoopcommon.RpcResponseHeaderProto_ERROR.Enum(),
			ExceptionClassName: proto.String(ServerError), ErrorMsg: proto.String("response: " + err.Error()),
			ErrorDetail: hadoopcommon.RpcResponseHeaderProto_ERROR_SERIALIZING_RESPONSE.Enum(),
		})
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	c.nc.Write(b)
	if cap(b) <= 1<<20 {
		c.wbuf = b[:0]
	}
	if r, ok := resp.(Releaser); ok {
		r.Release()
	}
}

// refusalReason is the refused counter's label of a handshake failure.
func refusalReason(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "closed"
	}
	return "handshake"
}
