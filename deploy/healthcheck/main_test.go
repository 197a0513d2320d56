package main

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/blockfs/blockfs/api"
)

type fakeNamenode struct {
	api.UnimplementedClientServiceServer
	status *api.ClusterStatusResponse
}

func (f *fakeNamenode) ClusterStatus(context.Context, *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	return f.status, nil
}

// serve starts a gRPC server with the health service in state st and, if
// status is not nil, a ClientService answering ClusterStatus with it.
func serve(t *testing.T, st healthpb.HealthCheckResponse_ServingStatus, status *api.ClusterStatusResponse) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", st)
	healthpb.RegisterHealthServer(s, hs)
	if status != nil {
		api.RegisterClientServiceServer(s, &fakeNamenode{status: status})
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestHealthcheck(t *testing.T) {
	serving := healthpb.HealthCheckResponse_SERVING
	dns := []*api.DatanodeInfo{
		{Id: "dn1", Addr: "127.0.0.1:9201", State: "live"},
		{Id: "dn2", Addr: "127.0.0.1:9202", State: "dead"},
	}
	nn := serve(t, serving, &api.ClusterStatusResponse{LeaderId: "nn1", Term: 2, Datanodes: dns})
	noLeader := serve(t, serving, &api.ClusterStatusResponse{Term: 3, Datanodes: dns})
	notServing := serve(t, healthpb.HealthCheckResponse_NOT_SERVING, nil)
	dn := serve(t, serving, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close()

	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"serving", []string{"-q", nn}, 0},
		{"not serving", []string{"-q", notServing}, 1},
		{"nothing listening", []string{"-q", "--timeout", "300ms", closed}, 1},
		{"no address", []string{"-q"}, 2},
		{"bad flag", []string{"--nope", nn}, 2},
		{"leader known", []string{"-q", "--leader", nn}, 0},
		{"no leader", []string{"-q", "--leader", noLeader}, 1},
		{"enough live datanodes", []string{"-q", "--min-datanodes", "1", nn}, 0},
		{"too few live datanodes", []string{"-q", "--min-datanodes", "2", nn}, 1},
		{"datanode live by id", []string{"-q", "--namenodes", nn, "--live-datanode", "dn1", dn}, 0},
		{"datanode live by address", []string{"-q", "--namenodes", nn, "--live-datanode", "127.0.0.1:9201", dn}, 0},
		{"datanode dead", []string{"-q", "--namenodes", nn, "--live-datanode", "dn2", dn}, 1},
		{"one namenode suffices", []string{"-q", "--namenodes", closed + "," + noLeader + "," + nn, "--leader", dn}, 0},
		{"no namenode suffices", []string{"-q", "--timeout", "300ms", "--namenodes", closed + "," + noLeader, "--leader", dn}, 1},
		{"every address must serve", []string{"-q", nn, notServing}, 1},
		{"wait gives up", []string{"-q", "--wait", "600ms", "--leader", noLeader}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("healthcheck %v = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}
