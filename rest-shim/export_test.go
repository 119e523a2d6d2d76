package restshim

import "github.com/vitolahq/vitola/subgraphs/subgraph"

// CatalogOperations exposes the internal operations to the black-box tests.
var CatalogOperations = catalogOperations

// UserOperations exposes the users operations to the black-box tests.
var UserOperations = userOperations

// FeedOperations exposes the operations the shim sends to the router.
var FeedOperations = []*subgraph.Operation{opVenueFeed, opBrandFeed}

// PaymentsOperations exposes the operations the shim sends to payments.
var PaymentsOperations = []*subgraph.Operation{opReserveCredits, opSettleCredits, opReleaseCredits}
