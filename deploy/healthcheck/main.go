// Command healthcheck is the Docker health check of the blockfs images. The
// images are built FROM scratch, so they have no shell or curl; compose runs
// this static binary instead. Scripts on the host can use it too.
//
//	healthcheck [flags] ADDR...
//
// Every ADDR must answer the standard gRPC health service
// (grpc.health.v1.Health/Check) with SERVING.
//
// The cluster conditions --leader, --min-datanodes and --live-datanode are
// checked with ClientService.ClusterStatus on the namenodes given by
// --namenodes (default: the ADDRs themselves); they hold when at least one of
// those namenodes reports all of them, so one namenode that is down does not
// make the others, or the datanodes, unhealthy.
//
// A namenode's check:  healthcheck -q --leader 127.0.0.1:9001
// A datanode's check:  healthcheck -q --namenodes 127.0.0.1:9001,127.0.0.1:9002 --live-datanode 127.0.0.1:9201 127.0.0.1:9201
// Wait for a cluster:  healthcheck --wait 60s --leader --min-datanodes 5 127.0.0.1:9001
// Under mTLS:          healthcheck --tls-ca ca.pem --tls-cert user-root.pem --tls-key user-root-key.pem --leader 127.0.0.1:9001
//
// Identity. The gRPC endpoints name their caller (Health/Check admits any
// role, ClusterStatus any role too). Against an mTLS cluster give
// --tls-ca, --tls-cert and --tls-key (any certificate of the cluster: in
// compose each node checks itself with its own); without them the check
// dials in plaintext and states --user and --role in the request metadata,
// as simple auth expects. Every flag of this group also reads
// $BLOCKFS_HEALTHCHECK_<FLAG>, so that a compose file sets them once in a
// service's environment and its `test:` stays the same in both modes.
//
// It exits 0 when healthy and 1, with the reason on stderr, otherwise, as
// Docker expects; 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/node/cliflag"
	"github.com/blockfs/blockfs/security"
)

type options struct {
	timeout      time.Duration
	service      string
	namenodes    []string
	leader       bool
	minDatanodes int
	liveDatanode string
	dialOpts     []grpc.DialOption
}

func (o *options) clusterChecks() bool {
	return o.leader || o.minDatanodes > 0 || o.liveDatanode != ""
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	var o options
	var nns string
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "deadline for one round of checks")
	wait := fs.Duration("wait", 0, "retry every 500ms until healthy or this much time has passed (0: check once)")
	fs.StringVar(&o.service, "service", "", "gRPC service name to check (default: the server as a whole)")
	fs.StringVar(&nns, "namenodes", "", "comma-separated namenode gRPC addresses for the cluster conditions (default: the ADDRs)")
	fs.BoolVar(&o.leader, "leader", false, "cluster condition: a Raft leader is known")
	fs.IntVar(&o.minDatanodes, "min-datanodes", 0, "cluster condition: at least this many datanodes are live")
	fs.StringVar(&o.liveDatanode, "live-datanode", "", "cluster condition: the datanode with this id or gRPC address is live")
	quiet := fs.Bool("q", false, "print nothing when healthy")
	env := cliflag.New(fs, "BLOCKFS_HEALTHCHECK_")
	var tlsCA, tlsCert, tlsKey, user, role string
	env.String(&tlsCA, "tls-ca", "", "cluster CA (PEM): check an mTLS cluster")
	env.String(&tlsCert, "tls-cert", "", "certificate (PEM) to present; any role's certificate of the cluster will do")
	env.String(&tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	env.String(&user, "user", "healthcheck", "name stated in the request metadata for simple auth (ignored under mTLS)")
	env.String(&role, "role", "user", "role stated with --user: user, datanode or namenode (ignored under mTLS)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: healthcheck [flags] HOST:PORT...")
		fs.PrintDefaults()
	}
	if err := env.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opts, err := dialOptions(tlsCA, tlsCert, tlsKey, user, role)
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		return 2
	}
	o.dialOpts = opts
	addrs := fs.Args()
	if len(addrs) == 0 {
		fs.Usage()
		return 2
	}
	o.namenodes = addrs
	if nns != "" {
		o.namenodes = nil
		for _, a := range strings.Split(nns, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.namenodes = append(o.namenodes, a)
			}
		}
	}

	deadline := time.Now().Add(*wait)
	for {
		msg, err := check(addrs, &o)
		if err == nil {
			if !*quiet {
				fmt.Println(msg)
			}
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "healthcheck:", err)
			return 1
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// check runs one round of checks and says what it saw.
func check(addrs []string, o *options) (string, error) {
	var seen []string
	for _, a := range addrs {
		if err := serving(a, o); err != nil {
			return "", err
		}
		seen = append(seen, a+" SERVING")
	}
	if o.clusterChecks() {
		var errs []error
		ok := false
		for _, nn := range o.namenodes {
			msg, err := cluster(nn, o)
			if err == nil {
				seen = append(seen, msg)
				ok = true
				break
			}
			errs = append(errs, err)
		}
		if !ok {
			return "", errors.Join(errs...)
		}
	}
	return strings.Join(seen, "; "), nil
}

// dialOptions: mTLS with the given files when any is set, else plaintext;
// always the simple-auth metadata, which an mTLS server ignores.
func dialOptions(ca, cert, key, user, role string) ([]grpc.DialOption, error) {
	r, err := security.ParseRole(role)
	if err != nil {
		return nil, fmt.Errorf("--role: %w", err)
	}
	if err := security.ValidateName(user); err != nil {
		return nil, fmt.Errorf("--user: %w", err)
	}
	opts := []grpc.DialOption{grpc.WithPerRPCCredentials(security.SimpleCredentials(security.Identity{Role: r, Name: user}))}
	tlsOpts, err := cliflag.ClientTLS(ca, cert, key)
	if err != nil {
		return nil, err
	}
	if tlsOpts == nil {
		tlsOpts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	return append(opts, tlsOpts...), nil
}

func dial(addr string, o *options) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr, o.dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return conn, nil
}

func serving(addr string, o *options) error {
	conn, err := dial(addr, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: o.service})
	if err != nil {
		return fmt.Errorf("%s: health check: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s: status %s", addr, resp.GetStatus())
	}
	return nil
}

func cluster(nn string, o *options) (string, error) {
	conn, err := dial(nn, o)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	st, err := api.NewClientServiceClient(conn).ClusterStatus(ctx, &api.ClusterStatusRequest{})
	if err != nil {
		return "", fmt.Errorf("%s: cluster status: %w", nn, err)
	}
	if o.leader && st.GetLeaderId() == "" {
		return "", fmt.Errorf("%s: no Raft leader known (term %d)", nn, st.GetTerm())
	}
	live, found := 0, false
	for _, d := range st.GetDatanodes() {
		if d.GetState() != "live" {
			continue
		}
		live++
		if o.liveDatanode != "" && (d.GetId() == o.liveDatanode || d.GetAddr() == o.liveDatanode) {
			found = true
		}
	}
	if live < o.minDatanodes {
		return "", fmt.Errorf("%s: %d live datanodes, want at least %d", nn, live, o.minDatanodes)
	}
	if o.liveDatanode != "" && !found {
		return "", fmt.Errorf("%s: datanode %s is not live there", nn, o.liveDatanode)
	}
	return fmt.Sprintf("%s: leader %q, term %d, %d live datanodes", nn, st.GetLeaderId(), st.GetTerm(), live), nil
}
