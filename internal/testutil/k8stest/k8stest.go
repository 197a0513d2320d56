// Package k8stest loads the Kubernetes manifests of deploy/k8s strictly
// into the API's Go types (an unknown field is an error), for the tests of
// cmd/namenode and cmd/datanode that check the manifests against the
// binaries' real flags.
package k8stest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// Kustomization is the part of kustomize's Kustomization the manifests use;
// it is decoded strictly too, so a field this type lacks is an error.
type Kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// Manifests are the objects of a kustomization, by name.
type Manifests struct {
	Kustomization Kustomization
	Namespaces    map[string]*corev1.Namespace
	StatefulSets  map[string]*appsv1.StatefulSet
	Services      map[string]*corev1.Service
	PDBs          map[string]*policyv1.PodDisruptionBudget
}

// Load reads dir/kustomization.yaml and every resource it lists. Every
// *.yaml file of dir must be the kustomization or one of its resources.
func Load(dir string) (*Manifests, error) {
	const op = "k8stest.Load"
	m := &Manifests{
		Namespaces: map[string]*corev1.Namespace{}, StatefulSets: map[string]*appsv1.StatefulSet{},
		Services: map[string]*corev1.Service{}, PDBs: map[string]*policyv1.PodDisruptionBudget{},
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, errs.Wrap(errs.IO, op, dir, err)
	}
	if err := yaml.UnmarshalStrict(b, &m.Kustomization); err != nil {
		return nil, errs.Wrap(errs.Invalid, op, "kustomization.yaml", err)
	}
	all, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range all {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(m.Kustomization.Resources, base) {
			return nil, errs.Newf(errs.Invalid, op, base, "not listed in kustomization.yaml's resources")
		}
	}
	for _, r := range m.Kustomization.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return nil, errs.Wrap(errs.IO, op, r, err)
		}
		for i, doc := range documents(b) {
			if err := m.add(doc); err != nil {
				return nil, errs.Wrap(errs.Invalid, op, fmt.Sprintf("%s document %d", r, i+1), err)
			}
		}
	}
	return m, nil
}

// documents splits a multi-document YAML file at its "---" lines, dropping
// documents that hold only comments.
func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		empty := true
		for _, ln := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(ln); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			out = append(out, []byte(d))
		}
	}
	return out
}

// add decodes one document strictly by its apiVersion and kind.
func (m *Manifests) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	strict := func(v any) error { return yaml.UnmarshalStrict(doc, v) }
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		var o corev1.Namespace
		if err := strict(&o); err != nil {
			return err
		}
		return put(m.Namespaces, o.Name, &o)
	case "v1 Service":
		var o corev1.Service
		if err := strict(&o); err != nil {
			return err
		}
		return put(m.Services, o.Name, &o)
	case "apps/v1 StatefulSet":
		var o appsv1.StatefulSet
		if err := strict(&o); err != nil {
			return err
		}
		return put(m.StatefulSets, o.Name, &o)
	case "policy/v1 PodDisruptionBudget":
		var o policyv1.PodDisruptionBudget
		if err := strict(&o); err != nil {
			return err
		}
		return put(m.PDBs, o.Name, &o)
	}
	return fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
}

func put[T any](dst map[string]*T, name string, o *T) error {
	if name == "" {
		return fmt.Errorf("object without a name")
	}
	if _, dup := dst[name]; dup {
		return fmt.Errorf("two objects named %q", name)
	}
	dst[name] = o
	return nil
}

// PodVars are the values of the downward-API fields a pod's containers
// may read: its name, namespace and IP.
func PodVars(name, namespace, ip string) map[string]string {
	return map[string]string{"metadata.name": name, "metadata.namespace": namespace, "status.podIP": ip}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// Args returns c's command-line arguments as the kubelet expands them:
// each $(VAR) replaced by the env var VAR of c, whose value is a literal
// or a downward-API field from vars. A reference to anything else is an
// error (the kubelet would leave it as it is).
func Args(c corev1.Container, vars map[string]string) ([]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := vars[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("env %s: unknown field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		default:
			return nil, fmt.Errorf("env %s: only literal values and field references are expected", e.Name)
		}
	}
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		var bad error
		out[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			v, ok := env[ref[2:len(ref)-1]]
			if !ok {
				bad = fmt.Errorf("argument %q refers to %s, which is not an env var of the container", a, ref)
			}
			return v
		})
		if bad != nil {
			return nil, bad
		}
	}
	return out, nil
}

// Flag returns the value of --name=value in args, and whether it is there.
func Flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name {
			return "true", true
		}
	}
	return "", false
}

// Port returns the container port named name.
func Port(c corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// SecretFile names the Secret and key a file path of c comes from: the
// volume mounted at a directory holding path must be a Secret volume.
func SecretFile(spec corev1.PodSpec, c corev1.Container, path string) (secret, key string, err error) {
	for _, vm := range c.VolumeMounts {
		rest, ok := strings.CutPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == vm.Name {
				if v.Secret == nil {
					return "", "", fmt.Errorf("%s is on volume %s, which is not a Secret", path, v.Name)
				}
				return v.Secret.SecretName, rest, nil
			}
		}
		return "", "", fmt.Errorf("%s: mount %s names no volume", path, vm.Name)
	}
	return "", "", fmt.Errorf("%s is on no volume mount of container %s", path, c.Name)
}

// Mounted reports whether c mounts the volume (or volume claim template)
// name at exactly dir.
func Mounted(c corev1.Container, name, dir string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
		return vm.Name == name && vm.MountPath == dir
	})
}

// Selects reports whether sel, which must use only matchLabels, selects
// pods with podLabels.
func Selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	return sel != nil && len(sel.MatchExpressions) == 0 && MapSelects(sel.MatchLabels, podLabels)
}

// MapSelects reports whether a Service's selector selects pods with
// podLabels (an empty selector selects nothing here).
func MapSelects(sel, podLabels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if podLabels[k] != v {
			return false
		}
	}
	return true
}

// HTTPProbe is an HTTP GET probe's target.
type HTTPProbe struct{ Path, Port, Scheme string }

// ProbeOf returns p's HTTP GET target, or nil when p is not one.
func ProbeOf(p *corev1.Probe) *HTTPProbe {
	if p == nil || p.HTTPGet == nil {
		return nil
	}
	return &HTTPProbe{p.HTTPGet.Path, p.HTTPGet.Port.String(), string(p.HTTPGet.Scheme)}
}

// HTTPSProblems describes what is wrong with how a pod's HTTP port is
// probed and scraped: under mTLS that port serves HTTPS with no client
// certificate needed, so the readiness and liveness probes must GET
// https /healthz on port "http", and the scrape annotations must name
// https, that port (httpPort) and /metrics. Nil when all is right.
func HTTPSProblems(pod corev1.PodTemplateSpec, c corev1.Container, httpPort int32) []string {
	var out []string
	for what, p := range map[string]*HTTPProbe{"readiness": ProbeOf(c.ReadinessProbe), "liveness": ProbeOf(c.LivenessProbe)} {
		if p == nil || *p != (HTTPProbe{Path: "/healthz", Port: "http", Scheme: "HTTPS"}) {
			out = append(out, fmt.Sprintf("%s probe %+v, want GET https /healthz on port http", what, p))
		}
	}
	a := pod.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != fmt.Sprint(httpPort) || a["prometheus.io/scheme"] != "https" || a["prometheus.io/path"] != "/metrics" {
		out = append(out, fmt.Sprintf("scrape annotations %v do not name https :%d/metrics", a, httpPort))
	}
	slices.Sort(out)
	return out
}

// PortOf returns the port of a host:port address.
func PortOf(addr string) (string, error) {
	_, p, err := net.SplitHostPort(addr)
	return p, err
}

// Rewrite returns args with every prefix old of a flag value replaced by
// new (tests point certificate paths at files they wrote).
func Rewrite(args []string, old, new string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, old) {
			a = k + "=" + new + strings.TrimPrefix(v, old)
		}
		out[i] = a
	}
	return out
}

// WriteTLS writes into dir the files blockfs-certs would for id: ca.pem,
// <role>-<name>.pem and <role>-<name>-key.pem, issued by ca.
func WriteTLS(dir string, ca *security.CA, id security.Identity) error {
	cert, key, err := security.IssueCert(ca, security.DefaultTrustDomain, id, []string{"localhost"})
	if err != nil {
		return err
	}
	base := filepath.Join(dir, id.Role.String()+"-"+id.Name)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca.CertPEM, 0o644); err != nil {
		return err
	}
	return security.WritePEMFiles(base+".pem", base+"-key.pem", cert, key)
}

// VerifyHost reports whether a server certificate issued by ca for hosts
// (as blockfs-certs --hosts gives them) is valid for the name host.
func VerifyHost(ca *security.CA, host string, hosts []string) error {
	certPEM, _, err := security.IssueCert(ca, security.DefaultTrustDomain, security.Identity{Role: security.RoleNamenode, Name: "probe"}, hosts)
	if err != nil {
		return err
	}
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		return fmt.Errorf("no PEM block")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return err
	}
	return cert.VerifyHostname(host)
}
