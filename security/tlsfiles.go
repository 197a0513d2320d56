package security

import (
	"crypto/tls"
	"os"

	"github.com/blockfs/blockfs/errs"
)

// TLSFromFiles reads a cluster CA and a node's certificate and key (PEM
// files, as written by cmd/blockfs-certs) and returns the server config
// (mTLS: client certificates required and verified against the CA) and the
// client config the node uses to dial its peers with the same certificate.
func TLSFromFiles(caFile, certFile, keyFile string) (server, client *tls.Config, err error) {
	read := func(p string) ([]byte, error) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, "security.TLSFromFiles", p, err)
		}
		return b, nil
	}
	ca, err := read(caFile)
	if err != nil {
		return nil, nil, err
	}
	cert, err := read(certFile)
	if err != nil {
		return nil, nil, err
	}
	key, err := read(keyFile)
	if err != nil {
		return nil, nil, err
	}
	if server, err = ServerTLSConfig(ca, cert, key); err != nil {
		return nil, nil, err
	}
	if client, err = ClientTLSConfig(ca, cert, key, ""); err != nil {
		return nil, nil, err
	}
	return server, client, nil
}
