// Command blockfs-certs makes the certificates of a blockfs cluster run
// with --auth=mtls: a CA, one certificate per server (namenode or datanode,
// usable as server and as client), and one client certificate per user
// (the certificate's CN is the user name the namenode sees).
//
//	blockfs-certs --dir certs --servers nn1,nn2,nn3,dn1,dn2 --hosts 127.0.0.1,localhost --users root,alice
//
// writes certs/ca.pem, certs/ca-key.pem, and <name>.pem + <name>-key.pem
// for each server and user. An existing CA in --dir is reused, so more
// certificates can be added later.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blockfs/blockfs/internal/cliflag"

	"github.com/blockfs/blockfs/security"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "blockfs-certs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("blockfs-certs", flag.ContinueOnError)
	dir := fs.String("dir", "certs", "directory to write the PEM files to")
	servers := fs.String("servers", "", "comma-separated server names (namenode and datanode ids)")
	users := fs.String("users", "", "comma-separated user names for client certificates")
	hosts := fs.String("hosts", "127.0.0.1,::1,localhost", "comma-separated IPs and DNS names the servers are reached at")
	caName := fs.String("ca-name", "blockfs cluster CA", "common name of a new CA")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *servers == "" && *users == "" {
		return errors.New("nothing to do: give --servers and/or --users")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	ca, err := loadOrMakeCA(*dir, *caName)
	if err != nil {
		return err
	}
	issue := func(name string, server bool) error {
		cert, key, err := security.IssueCert(ca, name, server, cliflag.SplitList(*hosts))
		if err != nil {
			return err
		}
		certFile, keyFile := filepath.Join(*dir, name+".pem"), filepath.Join(*dir, name+"-key.pem")
		if err := security.WritePEMFiles(certFile, keyFile, cert, key); err != nil {
			return err
		}
		fmt.Println(certFile)
		return nil
	}
	for _, s := range cliflag.SplitList(*servers) {
		if err := issue(s, true); err != nil {
			return err
		}
	}
	for _, u := range cliflag.SplitList(*users) {
		if err := issue(u, false); err != nil {
			return err
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
