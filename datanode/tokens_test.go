package datanode

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/security"
)

// keysNN is a namenode that answers only GetKeys: with the keys published
// so far or, when hang is set, not until the caller gives up. Everything
// else is unimplemented, so no heartbeat brings keys.
type keysNN struct {
	api.UnimplementedDatanodeProtocolServer
	hang  bool
	calls atomic.Int64
	mu    sync.Mutex
	keys  [][]byte
}

func (f *keysNN) GetKeys(ctx context.Context, _ *api.GetKeysRequest) (*api.GetKeysResponse, error) {
	f.calls.Add(1)
	if f.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.GetKeysResponse{Keys: slices.Clone(f.keys)}, nil
}

func (f *keysNN) publish(pub []byte) {
	f.mu.Lock()
	f.keys = append(f.keys, pub)
	f.mu.Unlock()
}

func startKeysNN(t *testing.T, f *keysNN) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterDatanodeProtocolServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// newSigning is a second namenode's signer, whose key the datanode has not
// been told about.
func newSigning(t *testing.T, node string) *testSigning {
	cfg := security.DefaultConfig()
	cfg.NodeID = node
	km, err := security.NewKeyManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := km.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := pk.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	is, err := security.NewIssuer(cfg, km, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigning{is: is, pub: pub}
}

// readWith reads a block the datanode does not hold with token: NotFound
// means the token was accepted, Unauthenticated that it was refused.
func readWith(c api.DataServiceClient, token []byte) codes.Code {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.ReadBlock(ctx, &api.ReadBlockRequest{Block: &api.Block{Id: 900, GenStamp: 1}, InodeId: testInode, Length: 1, Token: token})
	if err == nil {
		_, err = s.Recv()
	}
	return status.Code(err)
}

func (t *tokens) rounds() (started, done uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started, t.done
}

// TestUnknownKeyRefresh: reads naming a key the datanode has not heard of
// share one background refresh, never wait on a hanging namenode beyond
// the configured bounds, and are refused as Unauthenticated if the key
// stays unknown. Counts, not times, are checked.
func TestUnknownKeyRefresh(t *testing.T) {
	const readers = 8
	cases := []struct {
		name    string
		hang    bool
		publish bool // the namenode knows the new key by the time reads come
		timeout time.Duration
		wait    time.Duration
		want    codes.Code
		calls   int64 // GetKeys calls in all: the start-up round, then one per granted refresh
	}{
		// The start-up round never ends: the reads' own wait bounds them,
		// and no second round starts behind the hung one.
		{"hung namenode, wait bounds the read", true, false, time.Hour, 50 * time.Millisecond, codes.Unauthenticated, 1},
		// The per-namenode timeout ends each round; the readers share the
		// one refresh they asked for and are refused when it ends.
		{"hung namenode, timeout ends the refresh", true, false, 20 * time.Millisecond, time.Hour, codes.Unauthenticated, 2},
		// The key was published after start-up: one refresh finds it for
		// every reader.
		{"key published late", false, true, time.Hour, time.Hour, codes.NotFound, 2},
		// Nobody knows the key: one refresh, then refusal.
		{"key nobody has", false, false, time.Hour, time.Hour, codes.Unauthenticated, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nn := &keysNN{hang: tc.hang}
			cfg := testConfig(t, startKeysNN(t, nn))
			cfg.KeyRefreshPeriod = time.Hour
			cfg.KeyRefreshInterval = time.Hour
			cfg.KeyRefreshTimeout = tc.timeout
			cfg.KeyRefreshWait = tc.wait
			d := startDN(t, cfg)
			// Let the start-up round begin (and, unless it hangs, end) so
			// that the reads ask for a round of their own.
			eventually(t, "start-up key refresh", func() bool {
				started, done := d.tokens.rounds()
				return started == 1 && (tc.hang && nn.calls.Load() == 1 || done == 1)
			})
			if tc.hang && tc.timeout < time.Hour {
				eventually(t, "start-up refresh timing out", func() bool { _, done := d.tokens.rounds(); return done == 1 })
			}
			other := newSigning(t, "nn-new")
			if tc.publish {
				nn.publish(other.pub)
			}
			tok, err := other.is.BlockToken("tester", testInode, 900, 1, security.Read)
			if err != nil {
				t.Fatal(err)
			}
			c := dataClient(t, d.Addr())
			got := make([]codes.Code, readers)
			var wg sync.WaitGroup
			for i := range readers {
				wg.Add(1)
				go func() { defer wg.Done(); got[i] = readWith(c, tok) }()
			}
			wg.Wait()
			for i, code := range got {
				if code != tc.want {
					t.Errorf("reader %d: %v, want %v", i, code, tc.want)
				}
			}
			if n := nn.calls.Load(); n != tc.calls {
				t.Errorf("GetKeys called %d times, want %d", n, tc.calls)
			}
		})
	}
}
