package hadoopipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	hadoopcommon "github.com/blockfs/blockfs/api/hadoop/common"
)

var goodHeader = []byte{'h', 'r', 'p', 'c', rpcVersion, 0, authNone}

// frameOf is one request frame of msgs.
func frameOf(t *testing.T, msgs ...proto.Message) []byte {
	t.Helper()
	b, err := appendFrame(nil, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reqHeader(id int32) *hadoopcommon.RpcRequestHeaderProto {
	return &hadoopcommon.RpcRequestHeaderProto{
		RpcKind: hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(id),
		ClientId: make([]byte, 16), RetryCount: proto.Int32(0),
	}
}

func context_(t *testing.T, user, protocol string) []byte {
	return frameOf(t, reqHeader(callConnectionContext), &hadoopcommon.IpcConnectionContextProto{
		UserInfo: &hadoopcommon.UserInformationProto{EffectiveUser: proto.String(user)}, Protocol: proto.String(protocol),
	})
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestServerBadInput sends each bad opening on a raw connection and
// checks the server's answer: a FATAL response of the right class, the
// HTTP text, or a closed connection with nothing said. After each, and
// with the bad connection still open where the server keeps it, another
// client is served.
func TestServerBadInput(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	good := dial(t, addr, "eve", testProtocol)
	oversized := binary.BigEndian.AppendUint32(nil, 4097)
	truncated := append(binary.BigEndian.AppendUint32(nil, 100), make([]byte, 10)...)
	cases := []struct {
		name string
		send func(t *testing.T) []byte
		// want: "" for a closed connection with no answer, "HTTP" for the
		// text reply, else the FATAL response's class.
		want string
		// keepOpen: the server keeps serving the connection (an ERROR,
		// not a FATAL); then a good call on it must succeed.
		keepOpen bool
	}{
		{name: "garbage instead of hrpc", send: func(*testing.T) []byte { return []byte("garbage!") }},
		{name: "garbage before hrpc", send: func(*testing.T) []byte { return cat([]byte("xx"), goodHeader) }},
		{name: "empty connection", send: func(*testing.T) []byte { return nil }},
		{name: "short header", send: func(*testing.T) []byte { return []byte("hrp") }},
		{name: "wrong version", send: func(*testing.T) []byte { return []byte{'h', 'r', 'p', 'c', 8, 0, 0} },
			want: "org.apache.hadoop.ipc.RPC$VersionMismatch"},
		{name: "SASL auth", send: func(*testing.T) []byte { return []byte{'h', 'r', 'p', 'c', rpcVersion, 0, authSASL} },
			want: AccessControl},
		{name: "unknown auth byte", send: func(*testing.T) []byte { return []byte{'h', 'r', 'p', 'c', rpcVersion, 0, 0x42} },
			want: AccessControl},
		{name: "HTTP GET", send: func(*testing.T) []byte { return []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n") }, want: "HTTP"},
		{name: "truncated context frame", send: func(*testing.T) []byte { return cat(goodHeader, truncated) }},
		{name: "first frame is a call", send: func(t *testing.T) []byte {
			return cat(goodHeader, frameOf(t, reqHeader(0), wrapperspb.String("x")))
		}, want: IPCException},
		{name: "context of an unknown protocol", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", "org.example.Nope"))
		}, want: NoSuchProtocol},
		{name: "context naming no user", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "", testProtocol))
		}, want: AccessControl},
		{name: "frame over MaxFrame", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", testProtocol), oversized)
		}, want: IPCException},
		{name: "truncated call frame", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", testProtocol), truncated)
		}},
		{name: "garbage request header", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", testProtocol), []byte{0, 0, 0, 3, 2, 0xff, 0xff})
		}, want: IPCException},
		{name: "unknown method", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", testProtocol), frameOf(t, reqHeader(7), &hadoopcommon.RequestHeaderProto{
				MethodName: proto.String("nosuch"), DeclaringClassProtocolName: proto.String(testProtocol), ClientProtocolVersion: proto.Uint64(1),
			}, wrapperspb.String("x")))
		}, want: NoSuchMethod, keepOpen: true},
		{name: "call naming another protocol", send: func(t *testing.T) []byte {
			return cat(goodHeader, context_(t, "eve", testProtocol), frameOf(t, reqHeader(7), &hadoopcommon.RequestHeaderProto{
				MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String("org.example.Nope"), ClientProtocolVersion: proto.Uint64(1),
			}, wrapperspb.String("x")))
		}, want: NoSuchProtocol, keepOpen: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Write(tc.send(t)); err != nil {
				t.Fatal(err)
			}
			if !tc.keepOpen {
				nc.(*net.TCPConn).CloseWrite() // what was sent is all there is
			}
			switch {
			case tc.want == "":
				// Unread bytes left behind make the close a reset.
				if b, err := io.ReadAll(nc); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || len(b) != 0 {
					t.Errorf("got %q, %v; want the connection closed with nothing said", b, err)
				}
			case tc.want == "HTTP":
				b, _ := io.ReadAll(nc)
				if !strings.HasPrefix(string(b), "HTTP/1.1 404") || !strings.Contains(string(b), "Hadoop IPC port") {
					t.Errorf("HTTP reply %q", b)
				}
			default:
				frame, err := readFrame(nc, nil, 1<<20)
				if err != nil {
					t.Fatalf("no response: %v", err)
				}
				hdr, _, err := parseResponseHeader(frame)
				if err != nil {
					t.Fatal(err)
				}
				wantStatus := hadoopcommon.RpcResponseHeaderProto_FATAL
				if tc.keepOpen {
					wantStatus = hadoopcommon.RpcResponseHeaderProto_ERROR
				}
				if hdr.GetStatus() != wantStatus || hdr.GetExceptionClassName() != tc.want || hdr.GetErrorMsg() == "" {
					t.Errorf("response %v %s %q; want %v %s with a message", hdr.GetStatus(), hdr.GetExceptionClassName(), hdr.GetErrorMsg(), wantStatus, tc.want)
				}
				if tc.keepOpen {
					// The connection is still served: a good call on it.
					b := frameOf(t, reqHeader(8), &hadoopcommon.RequestHeaderProto{
						MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(testProtocol), ClientProtocolVersion: proto.Uint64(1),
					}, wrapperspb.String("again"))
					if _, err := nc.Write(b); err != nil {
						t.Fatal(err)
					}
					frame, err := readFrame(nc, nil, 1<<20)
					if err != nil {
						t.Fatalf("after the error: %v", err)
					}
					hdr, _, _ := parseResponseHeader(frame)
					if hdr.GetStatus() != hadoopcommon.RpcResponseHeaderProto_SUCCESS || hdr.GetCallId() != 8 {
						t.Errorf("after the error: %v for call %d", hdr.GetStatus(), hdr.GetCallId())
					}
					return
				}
				if rest, err := io.ReadAll(nc); err != nil || len(rest) != 0 {
					t.Errorf("after the FATAL response: %d bytes, %v; want the connection closed", len(rest), err)
				}
			}
			// The server still serves the connection opened before.
			if got, err := echo(context.Background(), good, "echo", tc.name); err != nil || got != "eve:"+tc.name {
				t.Fatalf("good connection after %s: %q, %v", tc.name, got, err)
			}
		})
	}
}

// TestServerKeepsServingDuringBadConnection holds a connection that never
// finishes its header open while another connects and is served.
func TestServerKeepsServingDuringBadConnection(t *testing.T) {
	leakCheck(t)
	_, addr := startServer(t)
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.Write([]byte("hr"))
	c := dial(t, addr, "frank", testProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := echo(ctx, c, "echo", "x"); err != nil || got != "frank:x" {
		t.Fatalf("while a connection stalls: %q, %v", got, err)
	}
	if _, err := echo(ctx, c, "sleep", "1"); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}
