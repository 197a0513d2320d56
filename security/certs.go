package security

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// CA is a certificate authority for a cluster's mutual TLS.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte // PKCS#8; keep it secret
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// GenerateCA makes a self-signed ECDSA P-256 CA valid for validFor from now.
func GenerateCA(cn string, validFor time.Duration) (*CA, error) {
	const op = "security.GenerateCA"
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), KeyPEM: keyPEM}, nil
}

// LoadCA parses a CA written by GenerateCA (certificate and PKCS#8 key PEM).
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	const op = "security.LoadCA"
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, op, "", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, op, "", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, errs.New(errs.Invalid, op, "", "not a CA certificate with a signing key")
	}
	return &CA{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// CertValidity is how long IssueCert's certificates are valid.
const CertValidity = 365 * 24 * time.Hour

// IssueCert issues an ECDSA P-256 leaf certificate for id in trustDomain,
// signed by ca. The identity is the one URI SAN spiffe://<trust
// domain>/<role>/<name> (the CN repeats the name for people; nothing reads
// it). Namenode and datanode certificates serve and dial (server and client
// use, with the SANs in hosts: IP literals become IP SANs, others DNS SANs);
// user certificates are client-only. It returns the certificate and PKCS#8
// key as PEM.
func IssueCert(ca *CA, trustDomain string, id Identity, hosts []string) (certPEM, keyPEM []byte, err error) {
	const op = "security.IssueCert"
	cn := id.Name
	if ca == nil {
		return nil, nil, errs.New(errs.Invalid, op, cn, "need a CA")
	}
	if id.Role < RoleNamenode || id.Role > RoleUser {
		return nil, nil, errs.Newf(errs.Invalid, op, cn, "unknown role %v", id.Role)
	}
	if err := ValidateName(id.Name); err != nil {
		return nil, nil, err
	}
	if err := ValidateTrustDomain(trustDomain); err != nil {
		return nil, nil, err
	}
	isServer := id.Role != RoleUser
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{id.URI(trustDomain)},
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	if isServer {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Internal, op, cn, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// WritePEMFiles writes a key (mode 0600) and then its certificate (mode
// 0644), each to a temporary file renamed into place, so a process reading
// them meanwhile sees the old pair or the new, never half a file.
func WritePEMFiles(certFile, keyFile string, certPEM, keyPEM []byte) error {
	if err := writeAtomic(keyFile, keyPEM, 0o600); err != nil {
		return errs.Wrap(errs.IO, "security.WritePEMFiles", keyFile, err)
	}
	if err := writeAtomic(certFile, certPEM, 0o644); err != nil {
		return errs.Wrap(errs.IO, "security.WritePEMFiles", certFile, err)
	}
	return nil
}

func writeAtomic(name string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, a no-op
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

func pool(caPEM []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		return nil, errs.New(errs.Invalid, "security.ServerTLSConfig", "", "no CA certificate in PEM")
	}
	return p, nil
}

// ServerTLSConfig returns a TLS 1.3 server config that presents certPEM/keyPEM
// and requires a client certificate verified against caPEM.
func ServerTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	p, err := pool(caPEM)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, "security.ServerTLSConfig", "", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{pair},
		ClientCAs:    p,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// ClientTLSConfig returns a TLS 1.3 client config that verifies the server
// against caPEM (and serverName, if not empty) and presents certPEM/keyPEM.
// With nil certPEM and keyPEM it presents no certificate.
func ClientTLSConfig(caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, error) {
	p, err := pool(caPEM)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: p, ServerName: serverName}
	if certPEM != nil || keyPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, "security.ClientTLSConfig", "", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
