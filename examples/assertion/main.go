// Command assertion makes billing account assertions for the payments API: a
// short-lived JWT a service client's backend signs for one account reference
// (see the payments API's docs, "Billing account assertions").
//
//	go run ./examples/assertion keygen -out shop          # writes shop.key (private) and shop.pub (register it)
//	vitola payments clients create --name shop --require-assertion --assertion-key shop.pub --return-url https://shop.example/paid
//	go run ./examples/assertion sign -key shop.key -client pcl_… -account customer-42 -audience https://pay.example/api/v1
//
// sign prints the assertion alone; send it as "assertion" with the account
// reference. Make a new one for each request: its jti is spent once, and it
// lives at most five minutes.
package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "assertion:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer, now func() time.Time) error {
	if len(args) == 0 {
		return errors.New("want keygen or sign")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "keygen":
		out := fs.String("out", "assertion", "file name prefix: PREFIX.key (private, keep it on your backend) and PREFIX.pub (register it)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return keygen(*out)
	case "sign":
		keyFile := fs.String("key", "", "the private key file (PEM, PKCS #8 Ed25519)")
		client := fs.String("client", "", "the service client's ID (pcl_…)")
		account := fs.String("account", "", "the billing account reference the request names")
		audience := fs.String("audience", "", "the payments API's base URL, {payments_origin}/api/v1")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *keyFile == "" || *client == "" || *account == "" || *audience == "" {
			return errors.New("sign needs -key, -client, -account and -audience")
		}
		pemBytes, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		token, err := Sign(pemBytes, *client, *account, *audience, now())
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
		return nil
	}
	return fmt.Errorf("unknown command %q: want keygen or sign", args[0])
}

// Sign makes an assertion for one account reference, valid for two minutes.
func Sign(privatePEM []byte, clientID, reference, audience string, now time.Time) (string, error) {
	block, _ := pem.Decode(privatePEM)
	if block == nil {
		return "", errors.New("the key file is not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("read the private key: %w", err)
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	claims := jwt.RegisteredClaims{
		Issuer:    clientID,
		Subject:   reference,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute)),
		ID:        fmt.Sprintf("%x", jti),
	}
	return jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims).SignedString(key)
}

func keygen(prefix string) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	if err := os.WriteFile(prefix+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(prefix+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
}
