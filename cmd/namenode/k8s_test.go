package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/blockfs/blockfs/internal/testutil/k8stest"
	"github.com/blockfs/blockfs/security"
)

// TestKubernetesManifests decodes deploy/k8s strictly and checks the
// namenode StatefulSet against this binary's flags: every pod's expanded
// arguments parse and validate, name the pod and its stable DNS names,
// bootstrap only on the first pod, listen on the ports the container and
// the headless Service declare, keep data on the claim and certificates in
// the Secret, and the probes, scrape annotations, resources and
// PodDisruptionBudget fit.
func TestKubernetesManifests(t *testing.T) {
	m, err := k8stest.Load("../../deploy/k8s")
	if err != nil {
		t.Fatal(err)
	}
	ns := m.Kustomization.Namespace
	if m.Namespaces[ns] == nil {
		t.Fatalf("the kustomization's namespace %q has no Namespace object", ns)
	}
	sts := m.StatefulSets["namenode"]
	if sts == nil {
		t.Fatal("no StatefulSet namenode")
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("namenode replicas %v, want 3", sts.Spec.Replicas)
	}
	pod := sts.Spec.Template
	if !k8stest.Selects(sts.Spec.Selector, pod.Labels) {
		t.Fatal("the StatefulSet's selector does not select its pods")
	}
	svc := m.Services[sts.Spec.ServiceName]
	if svc == nil || svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Fatalf("service %q must exist, be headless and publish not-ready addresses", sts.Spec.ServiceName)
	}
	if !k8stest.MapSelects(svc.Spec.Selector, pod.Labels) {
		t.Fatal("the Service does not select the namenode pods")
	}
	pdb := m.PDBs["namenode"]
	if pdb == nil || !k8stest.Selects(pdb.Spec.Selector, pod.Labels) || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatal("want a PodDisruptionBudget selecting the namenodes with maxUnavailable 1 (Raft keeps 2 of 3)")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "namenode" {
		t.Fatalf("command %v, want [namenode]", c.Command)
	}
	ports := map[string]int32{}
	for _, name := range []string{"grpc", "raft", "http"} {
		p, ok := k8stest.Port(c, name)
		if !ok {
			t.Fatalf("the container has no port %q", name)
		}
		ports[name] = p
	}
	for _, sp := range svc.Spec.Ports {
		if sp.TargetPort.String() != sp.Name || sp.Port != ports[sp.Name] {
			t.Errorf("service port %s (%d -> %s) does not match container port %d", sp.Name, sp.Port, sp.TargetPort.String(), ports[sp.Name])
		}
	}
	if len(svc.Spec.Ports) != len(ports) {
		t.Errorf("service has %d ports, the container %d", len(svc.Spec.Ports), len(ports))
	}
	if r := c.Resources.Requests; r.Cpu().IsZero() || r.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("want cpu and memory requests and a memory limit")
	}
	ca, err := security.GenerateCA("k8s test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dns := func(pod string, port int32) string {
		return fmt.Sprintf("%s.%s.%s.svc:%d", pod, svc.Name, ns, port)
	}
	for i := range int(*sts.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		t.Run(name, func(t *testing.T) {
			args, err := k8stest.Args(c, k8stest.PodVars(name, ns, "10.1.2.3"))
			if err != nil {
				t.Fatal(err)
			}
			// Certificates come from the Secret, under blockfs-certs's names.
			tls := t.TempDir()
			id := security.Identity{Role: security.RoleNamenode, Name: name}
			if err := k8stest.WriteTLS(tls, ca, id); err != nil {
				t.Fatal(err)
			}
			var mount string
			for flag, want := range map[string]string{"tls-ca": "ca.pem", "tls-cert": "namenode-" + name + ".pem", "tls-key": "namenode-" + name + "-key.pem"} {
				p, _ := k8stest.Flag(args, flag)
				secret, key, err := k8stest.SecretFile(pod.Spec, c, p)
				if err != nil || secret != "blockfs-namenode-tls" || key != want {
					t.Fatalf("--%s=%s: secret %q key %q (%v); want blockfs-namenode-tls key %q", flag, p, secret, key, err, want)
				}
				mount = filepath.Dir(p)
			}
			cfg, err := parse(k8stest.Rewrite(args, mount, tls))
			if err != nil {
				t.Fatalf("parse %v: %v", args, err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config of %v: %v", args, err)
			}
			wantJoin := dns(sts.Name+"-0", ports["grpc"])
			if i == 0 {
				wantJoin = ""
			}
			for _, chk := range []struct{ what, got, want string }{
				{"id", cfg.ID, name},
				{"auth", cfg.Auth.Mode.String(), "mtls"},
				{"grpc port", portOf(t, cfg.GRPCAddr), strconv.Itoa(int(ports["grpc"]))},
				{"raft port", portOf(t, cfg.Raft.Addr), strconv.Itoa(int(ports["raft"]))},
				{"http port", portOf(t, cfg.HTTPAddr), strconv.Itoa(int(ports["http"]))},
				{"advertised gRPC", cfg.AdvertiseGRPC, dns(name, ports["grpc"])},
				{"advertised Raft", cfg.Raft.Advertise, dns(name, ports["raft"])},
				{"join", cfg.Raft.Join, wantJoin},
				{"bootstrap", strconv.FormatBool(cfg.Raft.Bootstrap), strconv.FormatBool(i == 0)},
			} {
				if chk.got != chk.want {
					t.Errorf("%s = %q, want %q", chk.what, chk.got, chk.want)
				}
			}
			// docs/OPERATIONS.md's blockfs-certs --hosts covers the names
			// peers and datanodes dial.
			host, _, _ := net.SplitHostPort(cfg.AdvertiseGRPC)
			if err := k8stest.VerifyHost(ca, host, docHosts); err != nil {
				t.Errorf("the documented --hosts do not cover %s: %v", host, err)
			}
			if !k8stest.Mounted(c, "data", cfg.DataDir) || len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
				t.Errorf("--data-dir %s is not the volume claim template data", cfg.DataDir)
			}
		})
	}
	// The HTTP port serves TLS whenever the node has certificates; probes
	// and scrapes need no client certificate there.
	for _, problem := range k8stest.HTTPSProblems(pod, c, ports["http"]) {
		t.Error(problem)
	}
}

// docHosts are the --hosts docs/OPERATIONS.md gives blockfs-certs for
// Kubernetes.
var docHosts = []string{"*.blockfs-namenode.blockfs.svc", "*.blockfs-datanode.blockfs.svc", "localhost", "127.0.0.1"}

// portOf returns the port of a host:port address.
func portOf(t *testing.T, addr string) string {
	t.Helper()
	p, err := k8stest.PortOf(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}
