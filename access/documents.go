package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// Document is a trusted document: a GraphQL operation registered from a
// client's build manifest, under the ID the manifest gives it. Requests name
// it by that ID (documentId) or by the SHA-256 of its text (an automatic
// persisted query's hash); a key with TrustedDocumentsOnly runs nothing else.
type Document struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"` // lowercase hex of Body's SHA-256
	Body   string `json:"body"`
	Name   string `json:"name,omitempty"`
}

// DocumentHash is the lowercase hex SHA-256 of a document's text, as automatic
// persisted queries name it.
func DocumentHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// Errors of the trusted documents.
var (
	ErrDocumentNotFound = errors.New("no trusted document with that ID or hash")
	// ErrDocumentConflict: an ID is registered already with another text.
	ErrDocumentConflict = errors.New("a trusted document with that ID has another text")
)

// DocumentStore keeps trusted documents. access/sqlstore implements it.
type DocumentStore interface {
	// AddDocuments stores documents in one transaction and returns how many
	// were new: one already there with the same text is skipped, one with
	// another text is ErrDocumentConflict and nothing is added.
	AddDocuments(ctx context.Context, docs []Document) (int, error)
	// DocumentByID and DocumentBySHA256 return ErrDocumentNotFound.
	DocumentByID(ctx context.Context, id string) (Document, error)
	DocumentBySHA256(ctx context.Context, hash string) (Document, error)
}

// SetTrustedDocumentsOnly turns a key's trusted-documents-only setting on or
// off (by its ID or the key itself). Replicas see it within CacheTTL.
func (s *Service) SetTrustedDocumentsOnly(ctx context.Context, idOrKey string, on bool) (Key, error) {
	k, err := s.FindKey(ctx, idOrKey)
	if err != nil {
		return Key{}, err
	}
	if err := s.store.SetTrustedDocumentsOnly(ctx, k.ID, on); err != nil {
		return Key{}, err
	}
	k.TrustedDocumentsOnly = on
	return k, nil
}
