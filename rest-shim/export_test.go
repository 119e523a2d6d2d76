package restshim

import "github.com/vitolahq/vitola/subgraphs/subgraph"

// CatalogOperations exposes the internal operations to the black-box tests.
var CatalogOperations = catalogOperations

// UserOperations exposes the users operations to the black-box tests.
var UserOperations = userOperations

// FeedOperations exposes the operations the shim sends to the router.
var FeedOperations = []*subgraph.Operation{opVenueFeed, opBrandFeed}

// MatchingOperations exposes the operations the shim sends to matching.
var MatchingOperations = matchingOperations

// CigarsByID is the catalog entity lookup recognize sends.
var CigarsByID = opCigarsByID

// PaymentsOperations exposes the operations the shim sends to payments.
var PaymentsOperations = []*subgraph.Operation{opReserveCredits, opSettleCredits, opReleaseCredits, opPriorHold,
	opAuthenticateClient, opResolveAccount, opAutoReload, opOffers, opCreateOffer, opCreateSess, opSessionStatus, opMerchants, opCreateMerchant,
	opSetCredentials, opRevokeCredential, opRedeem, opHosted, opCancelHosted, opMethods, opAddTokenMethod, opSetDefault, opDeleteMethod, opConfirm,
	opFrameOrigins}

// RewriteCanned exposes the listener's rewrite of net/http's own refusals.
var RewriteCanned = rewriteCanned

// SplitCreated exposes how a created session's answer is taken apart.
func SplitCreated(v []byte) (replayed bool, token string, session []byte, id string, err error) {
	c, err := splitCreated(v)
	return c.replayed, c.token, c.session, c.id, err
}

// HoldsCardData exposes the check for raw card data in a body.
var HoldsCardData = holdsCardData

// ClientDigests returns how a new cache of verified service client
// credentials digests them.
func ClientDigests() func(id, secret string) [32]byte { return newClientAuths().digest }
