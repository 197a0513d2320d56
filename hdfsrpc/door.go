package hdfsrpc

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/hadoopipc"
)

// Protocol is the Java interface the door serves.
const Protocol = "org.apache.hadoop.hdfs.protocol.ClientProtocol"

// PolicyPrefix prefixes a method's row in security.Policy.
const PolicyPrefix = "hadoop.ClientProtocol/"

// Config is what the door needs from its namenode.
type Config struct {
	// Service is the namenode's client service: the entrance of every
	// gRPC call.
	Service api.ClientServiceServer
	// Authorize admits user to method's policy row (PolicyPrefix+method)
	// for req and returns ctx carrying the identity, or the refusal (the
	// per-user write rate limit included).
	Authorize func(ctx context.Context, row, user string, req any) (context.Context, error)
	// CallContext names one logical call for the namenode's retry cache:
	// a retried Hadoop call repeats its client id and call id.
	CallContext func(ctx context.Context, clientID []byte, callID int32) context.Context
	// Leader reports whether this namenode may take writes now (it is the
	// Raft leader); a write elsewhere is answered with StandbyException.
	Leader func() bool
	// Contact, when set, tells when a leader last reached this follower
	// (hashicorp/raft's *Raft): a write on a follower is answered with
	// StandbyException only once a leader is heard from, or this
	// namenode takes it as the new leader (standby.go).
	Contact LeaderContact
	// StandbyWait bounds how long a write waits so (0: 10 s).
	StandbyWait time.Duration
	// BackoffWait bounds how long the door holds a call Authorize backs
	// off with a retry hint before answering RetriableException (0: 10 s;
	// backoff.go).
	BackoffWait time.Duration
	// DataAddr is the host:port of a datanode's DataTransferProtocol door
	// ("" when it has none).
	DataAddr func(d *api.DatanodeInfo) string
	// Exception maps an error to Hadoop's exception class and message.
	Exception func(error) (class, message string)
	// Files finds a block's file when a writer names only the block.
	Files     FileFinder
	BlockPool string
	Log       *slog.Logger
}

// Door serves ClientProtocol; it is a hadoopipc.Handler.
type Door struct {
	cfg Config
	// boundary holds, by inode, the last block of a file reopened for
	// append at a block boundary, until its writer's first addBlock.
	boundary sync.Map
	// answers holds buffers for getBlockLocations' answers (wire.go).
	answers chan []byte
}

// New returns the door for cfg.
func New(cfg Config) (*Door, error) {
	const op = "hdfsrpc.New"
	if cfg.Service == nil || cfg.Authorize == nil || cfg.Leader == nil || cfg.DataAddr == nil || cfg.Exception == nil || cfg.Files == nil {
		return nil, errs.New(errs.Invalid, op, "", "Service, Authorize, Leader, DataAddr, Exception and Files are required")
	}
	if cfg.CallContext == nil {
		cfg.CallContext = func(ctx context.Context, _ []byte, _ int32) context.Context { return ctx }
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Door{cfg: cfg, answers: make(chan []byte, answerBuffers)}, nil
}

// opFunc runs one method on its decoded request.
type opFunc func(d *Door, ctx context.Context, c *hadoopipc.Call) (proto.Message, error)

// op is one row of the door's method table.
type op struct {
	write bool // mutates the namespace: the leader's alone
	run   opFunc
}

// Known implements hadoopipc.Handler.
func (d *Door) Known(method string) bool { _, ok := ops[method]; return ok }

// Methods lists the methods the door serves and whether each writes, for
// the policy table's test and the docs.
func Methods() map[string]bool {
	m := make(map[string]bool, len(ops))
	for k, o := range ops {
		m[k] = o.write
	}
	return m
}

// MethodNames is Methods' keys, sorted.
func MethodNames() []string {
	var s []string
	for k := range ops {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Serve implements hadoopipc.Handler: the standby check, then the method.
func (d *Door) Serve(ctx context.Context, c *hadoopipc.Call) (proto.Message, error) {
	o := ops[c.Method]
	if o.write && !d.cfg.Leader() && !d.awaitLeader(ctx) {
		return nil, &hadoopipc.Exception{Class: StandbyException,
			Message: "Operation category WRITE is not supported in state standby: this namenode is not the Raft leader"}
	}
	return o.run(d, ctx, c)
}

// StandbyException tells an HDFS client to try another namenode.
const StandbyException = "org.apache.hadoop.ipc.StandbyException"

// unary builds an opFunc from a typed translation: the request is
// decoded, admitted by the policy row and run with the call's retry
// identity in ctx.
func unary[Req any, P interface {
	*Req
	proto.Message
}](f func(d *Door, ctx context.Context, req P) (proto.Message, error)) opFunc {
	return func(d *Door, ctx context.Context, c *hadoopipc.Call) (proto.Message, error) {
		req := P(new(Req))
		if err := proto.Unmarshal(c.Body, req); err != nil {
			return nil, &hadoopipc.Exception{Class: "org.apache.hadoop.ipc.RpcServerException",
				Message: c.Method + ": the request does not decode: " + err.Error()}
		}
		cleanPaths(req.ProtoReflect())
		ctx, err := d.authorize(ctx, PolicyPrefix+c.Method, c.User, req)
		if err != nil {
			return nil, err
		}
		ctx = d.cfg.CallContext(ctx, c.ClientID, c.CallID)
		return f(d, ctx, req)
	}
}
