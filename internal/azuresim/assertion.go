package azuresim

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // G505: x5t is a SHA-1 thumbprint by definition (RFC 7515): it identifies, it protects nothing
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
)

// verifyCertAssertion checks a client assertion signed with a certificate,
// as MSAL sends for certificate credentials: a JWT signed PS256 (RS256 for
// ADFS-style authorities) whose x5t#S256 (or x5t) thumbprint names the
// certificate, issued by and about the client, for the token endpoint, not
// expired.
func verifyCertAssertion(assertion, certPEM, clientID string, now time.Time) error {
	cert, err := parseCert(certPEM)
	if err != nil {
		return err
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return errors.New("the assertion is not a JWT")
	}
	var hdr struct {
		Alg     string `json:"alg"`
		X5t     string `json:"x5t"`
		X5tS256 string `json:"x5t#S256"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return err
	}
	var claims struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return err
	}
	sha256Print := sha256.Sum256(cert.Raw)
	sha1Print := sha1.Sum(cert.Raw) //nolint:gosec // G401: the x5t thumbprint, as above
	switch {
	case hdr.X5tS256 != "" && thumbprintIs(hdr.X5tS256, sha256Print[:]):
	case hdr.X5t != "" && thumbprintIs(hdr.X5t, sha1Print[:]):
	default:
		return errors.New("the assertion's thumbprint does not match the application's certificate")
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return errors.New("the application's certificate has no RSA key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("the assertion's signature is not base64url: %w", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch hdr.Alg {
	case "PS256":
		err = rsa.VerifyPSS(pub, crypto.SHA256, digest[:], sig, nil)
	case "RS256":
		err = rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig)
	default:
		return fmt.Errorf("the assertion's algorithm %q is not supported", hdr.Alg)
	}
	if err != nil {
		return errors.New("the assertion's signature does not verify")
	}
	if !strings.EqualFold(claims.Iss, clientID) || !strings.EqualFold(claims.Sub, clientID) {
		return errors.New("the assertion was not issued by the client")
	}
	if !strings.HasSuffix(claims.Aud, "/oauth2/v2.0/token") && !strings.HasSuffix(claims.Aud, "/oauth2/token") {
		return errors.New("the assertion is not for the token endpoint")
	}
	if now.Unix() > claims.Exp {
		return errors.New("the assertion has expired")
	}
	return nil
}

// thumbprintIs compares a JWT thumbprint header with a digest. RFC 7515 says
// base64url; MSAL sends standard base64, which AAD accepts: so do we.
func thumbprintIs(header string, digest []byte) bool {
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(header); err == nil && string(b) == string(digest) {
			return true
		}
	}
	return false
}

func parseCert(certPEM string) (*x509.Certificate, error) {
	for rest := []byte(certPEM); ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("the application's certificate is not PEM")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return fmt.Errorf("the assertion is not base64url: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the assertion is not JSON: %w", err)
	}
	return nil
}
