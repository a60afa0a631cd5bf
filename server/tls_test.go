package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/server"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "distlock test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestTLS: with a certificate the server speaks HTTPS only; the remote
// engine reaches it with the CA.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	s := start(t, nil, server.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		server.WithTokens(tokens(t)))
	eng, err := remote.New(s.url, remote.WithToken(writeTok), remote.WithTLSConfig(&tls.Config{RootCAs: pool}))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "tls")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	if resp, err := http.Get("http://" + s.url[len("https://"):] + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("the TLS server answered plain HTTP")
	}
}
