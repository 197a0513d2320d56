package hadoopipc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
)

// ClientMaxFrame bounds a response frame a Client accepts (Hadoop's
// ipc.maximum.response.length is 128 MiB).
const ClientMaxFrame = 128 << 20

// ErrClientClosed is a call's error once its Client is closed.
var ErrClientClosed = errors.New("hadoopipc: client closed")

// errRequest is a request that cannot be encoded.
var errRequest = errors.New("request cannot be encoded")

// Client is one Hadoop IPC connection to one server and protocol, with
// simple authentication. Calls from many goroutines share the connection:
// each request carries its own call id and a reader goroutine hands every
// response to the call that waits for it, in whatever order the server
// answers.
type Client struct {
	nc       net.Conn
	protocol string
	clientID []byte

	wmu  sync.Mutex // one request frame at a time
	wbuf []byte

	// frames holds response buffers for the reader to fill: a call hands
	// its frame back once decoded, since proto.Unmarshal copies what it
	// keeps, so a connection's large answers reuse a few buffers instead
	// of growing a new one each (a sync.Pool would drop them at every GC,
	// which a stream of large answers sets off every few calls).
	frames chan []byte

	mu      sync.Mutex
	next    int32
	pending map[int32]chan []byte
	err     error // set once: the connection is done
	done    chan struct{}
	rdone   chan struct{} // closed when the reader returns
}

// Dial connects to addr, sends the connection header ("hrpc", version 9,
// simple authentication) and the connection context naming user and
// protocol (e.g. "org.apache.hadoop.hdfs.protocol.ClientProtocol"). The
// server does not answer a good context: a refused one is the error of the
// first Call.
func Dial(ctx context.Context, addr, user, protocol string) (*Client, error) {
	if user == "" || protocol == "" {
		return nil, errors.New("hadoopipc.Dial: user and protocol must be named")
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hadoopipc.Dial %s: %w", addr, err)
	}
	c := &Client{nc: nc, protocol: protocol, clientID: make([]byte, 16), pending: map[int32]chan []byte{}, frames: make(chan []byte, pooledFrames), done: make(chan struct{}), rdone: make(chan struct{})}
	rand.Read(c.clientID)
	if dl, ok := ctx.Deadline(); ok {
		nc.SetWriteDeadline(dl)
	}
	b := append([]byte(magic), rpcVersion, 0, authNone)
	b, err = appendFrame(b, c.header(callConnectionContext, -1), &hadoopcommon.IpcConnectionContextProto{
		UserInfo: &hadoopcommon.UserInformationProto{EffectiveUser: proto.String(user)},
		Protocol: proto.String(protocol),
	})
	if err == nil {
		_, err = nc.Write(b)
	}
	nc.SetWriteDeadline(time.Time{})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("hadoopipc.Dial %s: connection header: %w", addr, err)
	}
	go c.read()
	return c, nil
}

func (c *Client) header(id, retry int32) *hadoopcommon.RpcRequestHeaderProto {
	return &hadoopcommon.RpcRequestHeaderProto{
		RpcKind: hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:   hadoopcommon.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:  proto.Int32(id), ClientId: c.clientID, RetryCount: proto.Int32(retry),
	}
}

// Call runs method with req and decodes the response into resp. A
// server's ERROR or FATAL response is an *Exception with the Java class
// and message of its RpcResponseHeaderProto; a FATAL one also ends the
// connection. When ctx ends first, Call returns ctx's error and a late
// response is dropped; the connection stays usable.
func (c *Client) Call(ctx context.Context, method string, req, resp proto.Message) error {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	id := c.next
	c.next = (c.next + 1) & 0x7fffffff
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.send(ctx, id, method, req); errors.Is(err, errRequest) {
		return err // nothing was sent: the connection goes on
	} else if err != nil {
		// A write fails when the server has ended the connection; its
		// reason (a FATAL response) may still be on its way to the reader.
		select {
		case <-c.done:
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		c.fail(err)
		return c.closedErr()
	}
	var frame []byte
	select {
	case frame = <-ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		select { // an answer may have come with the end
		case frame = <-ch:
		default:
			return c.closedErr()
		}
	}
	defer c.release(frame)
	hdr, rest, err := parseResponseHeader(frame)
	if err != nil {
		return err
	}
	if hdr.GetStatus() != hadoopcommon.RpcResponseHeaderProto_SUCCESS {
		return exceptionOf(hdr)
	}
	msg, _, err := nextMessage(rest)
	if err != nil {
		if len(rest) == 0 { // an empty response message may be left out
			msg = nil
		} else {
			return fmt.Errorf("hadoopipc: %s response: %w", method, err)
		}
	}
	if err := proto.Unmarshal(msg, resp); err != nil {
		return fmt.Errorf("hadoopipc: %s response: %w", method, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, id int32, method string, req proto.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b, err := appendFrame(c.wbuf[:0], c.header(id, 0), &hadoopcommon.RequestHeaderProto{
		MethodName: proto.String(method), DeclaringClassProtocolName: proto.String(c.protocol),
		ClientProtocolVersion: proto.Uint64(1),
	}, req)
	if err != nil {
		return fmt.Errorf("hadoopipc: %s %w: %w", method, errRequest, err)
	}
	dl, _ := ctx.Deadline()
	c.nc.SetWriteDeadline(dl)
	if _, err := c.nc.Write(b); err != nil {
		return fmt.Errorf("hadoopipc: %s request: %w", method, err)
	}
	if cap(b) <= 1<<20 {
		c.wbuf = b[:0]
	}
	return nil
}

// read hands every response frame to its call until the connection ends.
func (c *Client) read() {
	defer close(c.rdone)
	for {
		var buf []byte
		select {
		case buf = <-c.frames:
		default:
		}
		frame, err := readFrame(c.nc, buf, ClientMaxFrame)
		if err != nil {
			c.fail(err)
			return
		}
		hdr, _, err := parseResponseHeader(frame)
		if err != nil {
			c.fail(err)
			return
		}
		if hdr.GetStatus() == hadoopcommon.RpcResponseHeaderProto_FATAL {
			// Hand it to its call if one waits, then end the connection
			// for every other one with the same exception.
			c.deliver(int32(hdr.GetCallId()), frame)
			c.fail(exceptionOf(hdr))
			return
		}
		c.deliver(int32(hdr.GetCallId()), frame)
	}
}

func (c *Client) deliver(id int32, frame []byte) {
	c.mu.Lock()
	ch := c.pending[id]
	c.mu.Unlock()
	if ch == nil {
		c.release(frame)
		return
	}
	select {
	case ch <- frame:
	default: // a second answer to one call id: dropped
		c.release(frame)
	}
}

// A Client keeps up to pooledFrames response buffers of at most
// maxPooledFrame bytes for reuse.
const (
	pooledFrames   = 4
	maxPooledFrame = 8 << 20
)

// release gives a frame's buffer back to the reader once nothing refers
// to its bytes.
func (c *Client) release(frame []byte) {
	if cap(frame) == 0 || cap(frame) > maxPooledFrame {
		return
	}
	select {
	case c.frames <- frame[:0]:
	default:
	}
}

// fail ends the connection with err (the first error wins).
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	c.nc.Close()
	close(c.done)
}

func (c *Client) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection and waits for its reader; waiting calls
// return ErrClientClosed.
func (c *Client) Close() error {
	c.fail(ErrClientClosed)
	<-c.rdone
	return nil
}

func parseResponseHeader(frame []byte) (*hadoopcommon.RpcResponseHeaderProto, []byte, error) {
	msg, rest, err := nextMessage(frame)
	if err != nil {
		return nil, nil, fmt.Errorf("hadoopipc: response header: %w", err)
	}
	hdr := &hadoopcommon.RpcResponseHeaderProto{}
	if err := proto.Unmarshal(msg, hdr); err != nil {
		return nil, nil, fmt.Errorf("hadoopipc: RpcResponseHeaderProto: %w", err)
	}
	return hdr, rest, nil
}

func exceptionOf(hdr *hadoopcommon.RpcResponseHeaderProto) *Exception {
	class := hdr.GetExceptionClassName()
	if class == "" {
		class = ServerError
	}
	return &Exception{Class: class, Message: hdr.GetErrorMsg()}
}
