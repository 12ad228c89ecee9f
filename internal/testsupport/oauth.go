package testsupport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
)

// RSAKey is an RSA key of 2048 bits for the OAuth tests, with its private
// half in PEM, PKCS #8 and PKCS #1: the forms the SDK reads.
type RSAKey struct {
	Key   *rsa.PrivateKey
	PKCS8 string // -----BEGIN PRIVATE KEY-----
	PKCS1 string // -----BEGIN RSA PRIVATE KEY-----
}

// NewRSAKey returns a new RSAKey. Generating one takes tens of
// milliseconds: a test suite makes the few it needs once (see RSAKeys).
func NewRSAKey() RSAKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err)
	}
	return RSAKey{
		Key:   key,
		PKCS8: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})),
		PKCS1: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
	}
}

// RSAKeys returns two keys, made once per test binary: the app's, whose
// public half the mock's OAuth app holds, and another, a wrong key.
var RSAKeys = sync.OnceValues(func() (RSAKey, RSAKey) { return NewRSAKey(), NewRSAKey() })

// NewRSAKeyOfBits returns a new RSAKey of that many bits (a key too small
// for the SDK, say).
func NewRSAKeyOfBits(bits int) RSAKey {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	return RSAKey{Key: key, PKCS8: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))}
}

// ECKeyPKCS8 returns a new ECDSA P-256 private key in PKCS #8 PEM: a key
// that is not RSA.
func ECKeyPKCS8() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// PublicKeyPEM returns pub in PKIX PEM ("PUBLIC KEY"), as Segment's app
// takes it (openssl rsa -pubout).
func PublicKeyPEM(pub *rsa.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}
