package security

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// TestAdmitHook: the Admit hook is asked about every authorized user call,
// told whether its rule is Write, and its error refuses the call; it is
// never asked about a call the policy refused, a node's call, or a
// public endpoint.
func TestAdmitHook(t *testing.T) {
	type asked struct {
		user, method string
		write        bool
	}
	var got []asked
	refuse := map[string]bool{}
	a := NewAuthorizer(AuthConfig{Simple: true, Env: fakeEnv{super: "root", member: "nn1"}, Registry: prometheus.NewRegistry(),
		Admit: func(id Identity, method string, write bool) error {
			got = append(got, asked{id.Name, method, write})
			if refuse[id.Name] {
				return errs.New(errs.Exhausted, method, "", "backed off")
			}
			return nil
		}})
	md := func(kv ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
	}
	refuse["carol"] = true
	tests := []struct {
		name   string
		ctx    context.Context
		method string
		asked  *asked
		kind   errs.Kind // 0: allowed
	}{
		{"user write", md(UserKey, "alice"), api.ClientService_Mkdirs_FullMethodName, &asked{"alice", api.ClientService_Mkdirs_FullMethodName, true}, 0},
		{"user read", md(UserKey, "bob"), api.ClientService_GetBlockLocations_FullMethodName, &asked{"bob", api.ClientService_GetBlockLocations_FullMethodName, false}, 0},
		{"refused by the hook, read", md(UserKey, "carol"), api.ClientService_GetFileInfo_FullMethodName, &asked{"carol", api.ClientService_GetFileInfo_FullMethodName, false}, errs.Exhausted},
		{"refused by the policy first", md(UserKey, "alice"), api.Admin_Snapshot_FullMethodName, nil, errs.Permission},
		{"a datanode's call", md(UserKey, "dn1", RoleKey, "datanode"), api.DatanodeProtocol_Heartbeat_FullMethodName, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			_, err := a.Authorize(tt.ctx, tt.method, nil)
			if k := errs.KindOf(err); err != nil && k != tt.kind || err == nil && tt.kind != 0 {
				t.Fatalf("Authorize: %v, want kind %v", err, tt.kind)
			}
			switch {
			case tt.asked == nil && len(got) > 0:
				t.Fatalf("hook asked %v", got)
			case tt.asked != nil && (len(got) != 1 || got[0] != *tt.asked):
				t.Fatalf("hook asked %v, want %v", got, *tt.asked)
			}
		})
	}
}
