/*
Copyright The Sample Controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command registry is an OCI registry for the end-to-end tests: the
// distribution API of go-containerregistry's pkg/registry (the one crane's
// own tests push to), its content in memory and gone when it exits, served
// over HTTPS with a certificate authority it makes up at start.
//
//	registry -ca-file DIR/ca.crt -addr-file DIR/address [-ip 10.201.37.1]
//
// Why HTTPS, when everything is on one host: a node pulls over TLS from any
// registry it is not told is insecure, and a test that turned verification
// off would prove nothing about the way a cluster really pulls. So the
// registry has a CA of its own, written to -ca-file, which whoever pulls or
// pushes is told to trust (containerd through a hosts.toml, the image tool
// through -ca-file), and nothing else is: not the host's trust store, not
// another run's registry.
//
// It listens on 127.0.0.1 only (port 0: the kernel picks a free one, so two
// runs never race for a port) and writes the address it got to -addr-file
// once it accepts connections: a caller waits for that file, then reads the
// port. containerd runs in the host's network namespace, so 127.0.0.1
// reaches the registry from the node's image pulls.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on (a loopback one: port 0 picks a free port)")
	caFile := flag.String("ca-file", "", "write the PEM certificate of the serving certificate's CA here (required)")
	addrFile := flag.String("addr-file", "", "write the address listened on (HOST:PORT) here (required)")
	ips := flag.String("ip", "", "more IP addresses for the serving certificate, comma-separated (e.g. the node's)")
	flag.Parse()
	if *caFile == "" || *addrFile == "" {
		fmt.Fprintln(os.Stderr, "usage: registry -ca-file FILE -addr-file FILE [-addr 127.0.0.1:0] [-ip IP,...]")
		os.Exit(2)
	}
	if err := run(*addr, *caFile, *addrFile, *ips); err != nil {
		log.Fatalf("registry: %v", err)
	}
}

func run(addr, caFile, addrFile, extraIPs string) error {
	// Loopback only: the registry takes pushes from anyone who reaches it,
	// with no authentication at all.
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %s: listen on a loopback address only", addr)
	}
	ips := []net.IP{net.ParseIP(host)}
	for _, s := range strings.Split(extraIPs, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("-ip %q is not an IP address", s)
		}
		ips = append(ips, ip)
	}
	caPEM, cert, err := certificates(ips)
	if err != nil {
		return err
	}
	// The CA first, then the address: a caller that sees the address may
	// read the CA.
	if err := writeFile(caFile, caPEM); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		// Every request is logged (method and URL) on stderr: the tests
		// read there which manifests and blobs a node fetched.
		Handler:           registry.New(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}
	// The listener is open: connections wait in its backlog until Serve
	// accepts them, so the address may be published before Serve runs.
	if err := writeFile(addrFile, []byte(l.Addr().String()+"\n")); err != nil {
		return err
	}
	log.Printf("serving https://%s, CA in %s", l.Addr(), caFile)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		_ = srv.Close()
	}()
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// certificates makes a CA and a serving certificate it signs for ips, both
// ECDSA P-256 (small and fast to make: this runs at every start). The CA is
// what clients trust, not the serving certificate itself, as with a real
// registry: the serving key could be replaced without them noticing. The
// CA's key is dropped once it has signed: nothing else will ever be issued
// under it, so a CA file left on disk after the run vouches for nothing.
func certificates(ips []net.IP) (caPEM []byte, serving tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "sample-controller e2e registry CA"},
		// A minute back: a clock a little behind ours still accepts it.
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs the one serving certificate below, and nothing under
		// that (MaxPathLenZero with MaxPathLen 0).
		MaxPathLen:     0,
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: ips[0].String()},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		// Clients check the address they dialled against the IP SANs (the
		// common name has not counted for years): an image named
		// 127.0.0.1:PORT/... needs 127.0.0.1 here.
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	// The chain a client is sent: the serving certificate alone, as the
	// client holds the CA already.
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}, nil
}

// serial is a random 128-bit serial number, as RFC 5280 asks for (unique
// per issuer; random makes that so without keeping state).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err)
	}
	return n
}

// writeFile writes data to path whole or not at all (a temporary file
// renamed into place), so a caller polling for the file never reads half of
// it.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
