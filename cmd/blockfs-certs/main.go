// Command blockfs-certs makes the certificates of a blockfs cluster run
// with --auth=mtls: a CA and role certificates. Each certificate names one
// role and one name in its only URI SAN, spiffe://<trust-domain>/<role>/<name>:
// namenodes (name = Raft id) and datanodes (name = datanode id) get server
// and client use with the --hosts SANs; users get client-only certificates.
//
//	blockfs-certs --dir certs --namenodes nn1,nn2,nn3 --datanodes dn1,dn2 --users root,alice --hosts 127.0.0.1,localhost
//
// writes certs/ca.pem, certs/ca-key.pem, and <role>-<name>.pem +
// <role>-<name>-key.pem for each (namenode-nn1.pem, user-alice.pem, ...).
// An existing CA in --dir is reused, and an existing certificate is kept
// (unless --force), so running it again only adds what is missing. Files
// are written to a temporary name and renamed into place.
//
//	blockfs-certs fingerprint CERT.pem...
//
// prints each certificate's serial and SHA-256 fingerprint, what
// `dfs admin revoke --serial` or `--fingerprint` takes, and its identity.
package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blockfs/blockfs/internal/node/cliflag"

	"github.com/blockfs/blockfs/security"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "blockfs-certs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "fingerprint" {
		return fingerprint(args[1:])
	}
	fs := flag.NewFlagSet("blockfs-certs", flag.ContinueOnError)
	dir := fs.String("dir", "certs", "directory to write the PEM files to")
	namenodes := fs.String("namenodes", "", "comma-separated namenode ids (their Raft server ids)")
	datanodes := fs.String("datanodes", "", "comma-separated datanode ids")
	users := fs.String("users", "", "comma-separated user names for client certificates")
	force := fs.Bool("force", false, "reissue certificates that already exist in --dir (the CA is always reused)")
	trustDomain := fs.String("trust-domain", security.DefaultTrustDomain, "the cluster's SPIFFE trust domain (the namenodes' and datanodes' --trust-domain)")
	hosts := fs.String("hosts", "127.0.0.1,::1,localhost", "comma-separated IPs and DNS names the servers are reached at")
	caName := fs.String("ca-name", "blockfs cluster CA", "common name of a new CA")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *namenodes == "" && *datanodes == "" && *users == "" {
		return errors.New("nothing to do: give --namenodes, --datanodes and/or --users")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	ca, err := loadOrMakeCA(*dir, *caName)
	if err != nil {
		return err
	}
	issue := func(id security.Identity) error {
		base := id.Role.String() + "-" + id.Name
		certFile, keyFile := filepath.Join(*dir, base+".pem"), filepath.Join(*dir, base+"-key.pem")
		if !*force && exists(certFile) && exists(keyFile) {
			fmt.Println(certFile, "(kept)")
			return nil
		}
		cert, key, err := security.IssueCert(ca, *trustDomain, id, cliflag.SplitList(*hosts))
		if err != nil {
			return err
		}
		if err := security.WritePEMFiles(certFile, keyFile, cert, key); err != nil {
			return err
		}
		fmt.Println(certFile)
		return nil
	}
	for _, g := range []struct {
		role  security.Role
		names string
	}{{security.RoleNamenode, *namenodes}, {security.RoleDatanode, *datanodes}, {security.RoleUser, *users}} {
		for _, name := range cliflag.SplitList(g.names) {
			if err := issue(security.Identity{Role: g.role, Name: name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func loadOrMakeCA(dir, name string) (*security.CA, error) {
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	certPEM, err1 := os.ReadFile(certFile)
	keyPEM, err2 := os.ReadFile(keyFile)
	if err1 == nil && err2 == nil {
		return security.LoadCA(certPEM, keyPEM)
	}
	ca, err := security.GenerateCA(name, 10*365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	if err := security.WritePEMFiles(certFile, keyFile, ca.CertPEM, ca.KeyPEM); err != nil {
		return nil, err
	}
	fmt.Println(certFile)
	return ca, nil
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// fingerprint prints, per PEM file, the leaf certificate's serial (hex),
// its SHA-256 fingerprint (hex) and its URI SAN.
func fingerprint(files []string) error {
	if len(files) == 0 {
		return errors.New("usage: blockfs-certs fingerprint CERT.pem...")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		blk, _ := pem.Decode(b)
		if blk == nil || blk.Type != "CERTIFICATE" {
			return fmt.Errorf("%s: no PEM certificate", f)
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		id := "-"
		if len(cert.URIs) == 1 {
			id = cert.URIs[0].String()
		}
		fmt.Printf("%s\tserial %s\tsha256 %s\t%s\n", f, security.SerialHex(cert), security.Fingerprint(cert), id)
	}
	return nil
}
