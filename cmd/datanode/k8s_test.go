package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blockfs/blockfs/internal/testutil/k8stest"
	"github.com/blockfs/blockfs/security"
)

// TestKubernetesManifests decodes deploy/k8s strictly and checks the
// datanode StatefulSet against this binary's flags: each pod's expanded
// arguments parse and validate, name the pod (which its certificate, from
// the Secret keyed by pod name, names too), advertise its stable DNS name,
// report to exactly the namenode StatefulSet's pods at their gRPC port with
// the namenodes' heartbeat interval, store data on the claim, and the
// ports, probes, scrape annotations, resources and PodDisruptionBudget fit.
func TestKubernetesManifests(t *testing.T) {
	m, err := k8stest.Load("../../deploy/k8s")
	if err != nil {
		t.Fatal(err)
	}
	ns := m.Kustomization.Namespace
	sts, nn := m.StatefulSets["datanode"], m.StatefulSets["namenode"]
	if sts == nil || nn == nil {
		t.Fatal("want StatefulSets datanode and namenode")
	}
	pod := sts.Spec.Template
	svc := m.Services[sts.Spec.ServiceName]
	if svc == nil || svc.Spec.ClusterIP != "None" || !k8stest.MapSelects(svc.Spec.Selector, pod.Labels) {
		t.Fatalf("service %q must exist, be headless and select the datanodes", sts.Spec.ServiceName)
	}
	if !k8stest.Selects(sts.Spec.Selector, pod.Labels) {
		t.Fatal("the StatefulSet's selector does not select its pods")
	}
	if pdb := m.PDBs["datanode"]; pdb == nil || !k8stest.Selects(pdb.Spec.Selector, pod.Labels) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatal("want a PodDisruptionBudget selecting the datanodes with maxUnavailable 1")
	}
	c := pod.Spec.Containers[0]
	if len(pod.Spec.Containers) != 1 || len(c.Command) != 1 || c.Command[0] != "datanode" {
		t.Fatalf("want one container running datanode, got %d, %v", len(pod.Spec.Containers), c.Command)
	}
	ports := map[string]int32{}
	for _, name := range []string{"grpc", "http"} {
		p, ok := k8stest.Port(c, name)
		if !ok {
			t.Fatalf("the container has no port %q", name)
		}
		ports[name] = p
	}
	for _, sp := range svc.Spec.Ports {
		if sp.TargetPort.String() != sp.Name || sp.Port != ports[sp.Name] {
			t.Errorf("service port %s does not match the container's", sp.Name)
		}
	}
	if r := c.Resources.Requests; r.Cpu().IsZero() || r.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("want cpu and memory requests and a memory limit")
	}

	// What the namenodes are: their pods' names, gRPC port and heartbeat.
	nnc := nn.Spec.Template.Spec.Containers[0]
	nnGRPC, _ := k8stest.Port(nnc, "grpc")
	var namenodes []string
	for i := range int(*nn.Spec.Replicas) {
		namenodes = append(namenodes, fmt.Sprintf("%s-%d.%s.%s.svc:%d", nn.Name, i, nn.Spec.ServiceName, ns, nnGRPC))
	}
	nnArgs, err := k8stest.Args(nnc, k8stest.PodVars(nn.Name+"-0", ns, "10.1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	nnHeartbeat, _ := k8stest.Flag(nnArgs, "heartbeat-interval")

	ca, err := security.GenerateCA("k8s test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int(*sts.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		t.Run(name, func(t *testing.T) {
			args, err := k8stest.Args(c, k8stest.PodVars(name, ns, "10.1.2.4"))
			if err != nil {
				t.Fatal(err)
			}
			tls := t.TempDir()
			if err := k8stest.WriteTLS(tls, ca, security.Identity{Role: security.RoleDatanode, Name: name}); err != nil {
				t.Fatal(err)
			}
			var mount string
			for flag, want := range map[string]string{"tls-ca": "ca.pem", "tls-cert": "datanode-" + name + ".pem", "tls-key": "datanode-" + name + "-key.pem"} {
				p, _ := k8stest.Flag(args, flag)
				secret, key, err := k8stest.SecretFile(pod.Spec, c, p)
				if err != nil || secret != "blockfs-datanode-tls" || key != want {
					t.Fatalf("--%s=%s: secret %q key %q (%v); want blockfs-datanode-tls key %q", flag, p, secret, key, err, want)
				}
				mount = filepath.Dir(p)
			}
			cfg, _, err := parse(k8stest.Rewrite(args, mount, tls))
			if err != nil {
				t.Fatalf("parse %v: %v", args, err)
			}
			if hb, _ := time.ParseDuration(nnHeartbeat); cfg.HeartbeatInterval != hb {
				t.Errorf("heartbeat interval %v, the namenodes expect %s", cfg.HeartbeatInterval, nnHeartbeat)
			}
			for _, chk := range []struct{ what, got, want string }{
				{"id", cfg.ID, name},
				{"auth", cfg.Auth, "mtls"},
				{"grpc port", portOf(t, cfg.GRPCAddr), strconv.Itoa(int(ports["grpc"]))},
				{"http port", portOf(t, cfg.HTTPAddr), strconv.Itoa(int(ports["http"]))},
				{"advertised address", cfg.AdvertiseAddr, fmt.Sprintf("%s.%s.%s.svc:%d", name, svc.Name, ns, ports["grpc"])},
				{"encryption at rest", strconv.FormatBool(cfg.Store.Encrypt), "true"},
			} {
				if chk.got != chk.want {
					t.Errorf("%s = %q, want %q", chk.what, chk.got, chk.want)
				}
			}
			if !slices.Equal(cfg.Namenodes, namenodes) {
				t.Errorf("--namenodes %v, want the namenode pods %v", cfg.Namenodes, namenodes)
			}
			if len(cfg.DataDirs) != 1 || !k8stest.Mounted(c, "data", cfg.DataDirs[0]) || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
				t.Errorf("--data-dirs %v is not the volume claim template data", cfg.DataDirs)
			}
		})
	}
	// Under mTLS the HTTP port serves HTTPS; probes and scrapes need no
	// client certificate there.
	for _, problem := range k8stest.HTTPSProblems(pod, c, ports["http"]) {
		t.Error(problem)
	}
}

// portOf returns the port of a host:port address.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	p, err := k8stest.PortOf(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}
