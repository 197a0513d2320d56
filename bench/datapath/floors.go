package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	crand "crypto/rand"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/datanode"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/security"
)

// cryptoFloor is what one core does to the bytes lbm must touch anyway:
// AES-256-CTR (lbm's cipher at rest) and CRC32C, over size bytes in
// ioSize pieces.
func cryptoFloor(size int64, pat pattern, ioSize int) (float64, error) {
	key := make([]byte, 32)
	iv := make([]byte, aes.BlockSize)
	crand.Read(key)
	crand.Read(iv)
	b, err := aes.NewCipher(key)
	if err != nil {
		return 0, err
	}
	ctr := cipher.NewCTR(b, iv)
	tab := crc32.MakeTable(crc32.Castagnoli)
	dst := make([]byte, ioSize)
	scratch := make([]byte, ioSize)
	var crc uint32
	start := time.Now()
	for off := int64(0); off < size; {
		k := int(min(int64(ioSize), size-off))
		src := pat.at(off, k, scratch)
		crc = crc32.Update(crc, tab, src)
		ctr.XORKeyStream(dst[:k], src)
		off += int64(k)
	}
	d := time.Since(start)
	_ = crc
	return mbps(size, d), nil
}

// diskFloor writes size bytes to a new file in dir in ioSize writes and
// fsyncs it once at the end, like dd bs=ioSize conv=fsync; the time
// includes the fsync.
func diskFloor(dir string, size int64, pat pattern, ioSize int) (float64, error) {
	name := filepath.Join(dir, "datapath-floor.tmp")
	f, err := os.Create(name)
	if err != nil {
		return 0, err
	}
	defer os.Remove(name)
	defer f.Close()
	scratch := make([]byte, ioSize)
	start := time.Now()
	for off := int64(0); off < size; {
		k := int(min(int64(ioSize), size-off))
		if _, err := f.Write(pat.at(off, k, scratch)); err != nil {
			return 0, err
		}
		off += int64(k)
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	d := time.Since(start)
	return mbps(size, d), f.Close()
}

// streamFloor is a bare DataService whose ReadBlock streams pattern bytes
// in the datanode's message size: no token, no store, no checksum, no
// interceptors; loopback, and TLS exactly when the cluster uses it.
type streamFloor struct {
	srv  *grpc.Server
	conn *grpc.ClientConn
}

type floorService struct {
	api.UnimplementedDataServiceServer
	pat  pattern
	size int
}

func (s *floorService) ReadBlock(req *api.ReadBlockRequest, stream grpc.ServerStreamingServer[api.ReadBlockResponse]) error {
	scratch := make([]byte, s.size)
	for off := int64(0); off < int64(req.Length); {
		k := int(min(int64(s.size), int64(req.Length)-off))
		if err := stream.Send(&api.ReadBlockResponse{Offset: uint64(off), Data: s.pat.at(off, k, scratch)}); err != nil {
			return err
		}
		off += int64(k)
	}
	return nil
}

func newStreamFloor(c *localcluster.Cluster, mtls bool, msgSize int, pat pattern) (*streamFloor, error) {
	var sopts []grpc.ServerOption
	copts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if mtls {
		ca := c.CA()
		cert, key, err := security.IssueCert(ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleDatanode, Name: "stream-floor"}, []string{"127.0.0.1"})
		if err != nil {
			return nil, err
		}
		stls, err := security.ServerTLSConfig(ca.CertPEM, cert, key)
		if err != nil {
			return nil, err
		}
		ctls, err := c.TLSFor(security.Identity{Role: security.RoleUser, Name: "root"})
		if err != nil {
			return nil, err
		}
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(stls)))
		copts = []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(ctls))}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer(sopts...)
	api.RegisterDataServiceServer(srv, &floorService{pat: pat, size: msgSize})
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), copts...)
	if err != nil {
		srv.Stop()
		return nil, err
	}
	return &streamFloor{srv: srv, conn: conn}, nil
}

// measure receives size bytes in one stream, copying each message into a
// buffer as the client's reader does.
func (f *streamFloor) measure(ctx context.Context, size int64) (float64, error) {
	buf := make([]byte, 4<<20)
	start := time.Now()
	stream, err := api.NewDataServiceClient(f.conn).ReadBlock(ctx, &api.ReadBlockRequest{Length: uint64(size)})
	if err != nil {
		return 0, err
	}
	var got int64
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		copy(buf, m.Data)
		got += int64(len(m.Data))
	}
	d := time.Since(start)
	if got != size {
		return 0, fmt.Errorf("stream floor got %d of %d bytes", got, size)
	}
	return mbps(size, d), nil
}

func (f *streamFloor) close() {
	f.conn.Close()
	f.srv.Stop()
}

// diskBytesRead sums the bytes the running datanodes' stores read from
// their data files (block bytes and chunk CRC tables).
func diskBytesRead(c *localcluster.Cluster) int64 {
	var total int64
	for _, d := range c.Datanodes() {
		total += d.Store().DiskBytesRead()
	}
	return total
}

// inflightCap returns the datanode's cap on bytes of writes in flight:
// given, or an int field of datanode.DefaultConfig whose name says it is
// one (MaxInflightBytes, InFlightWriteBytes, ...), or 0 and "none" when
// the datanode has none yet.
func inflightCap(given int64) (int64, string) {
	if given >= 0 {
		return given, "--inflight-cap"
	}
	re := regexp.MustCompile(`(?i)in_?flight.*bytes|bytes.*in_?flight`)
	v := reflect.ValueOf(datanode.DefaultConfig())
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if re.MatchString(f.Name) && v.Field(i).CanInt() {
			return v.Field(i).Int(), "datanode.Config." + f.Name
		}
	}
	return 0, "none in datanode.Config"
}

// bytesPerChecksum returns the chunk size lbm stored block id with, from
// the first datanode that has it (0: an old-format block, or none has it).
func bytesPerChecksum(c *localcluster.Cluster, id uint64) int {
	for _, d := range c.Datanodes() {
		if info, ok := d.Store().Stat(id); ok {
			return info.BytesPerChecksum
		}
	}
	return 0
}

// dataPathCommit names the commit being measured, with the data-path
// packages that have uncommitted changes.
func dataPathCommit() string {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return buildCommit()
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = strings.TrimSpace(string(top))
		return cmd.Output()
	}
	out, err := git("rev-parse", "--short", "HEAD")
	if err != nil {
		return buildCommit()
	}
	commit := strings.TrimSpace(string(out))
	st, err := git("status", "--porcelain", "--", "api", "lbm", "datanode", "client")
	if lines := strings.TrimRight(string(st), "\n"); err == nil && lines != "" {
		dirty := map[string]bool{}
		var names []string
		for _, l := range strings.Split(lines, "\n") {
			if len(l) > 3 {
				top := strings.SplitN(strings.TrimSpace(l[3:]), "/", 2)[0]
				if !dirty[top] {
					dirty[top] = true
					names = append(names, top)
				}
			}
		}
		commit += "+uncommitted(" + strings.Join(names, ",") + ")"
	}
	return commit
}

// buildCommit is the commit a binary built outside the tree was stamped
// with, if any.
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	if modified {
		rev += "+uncommitted"
	}
	return rev
}
