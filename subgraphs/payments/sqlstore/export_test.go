package sqlstore

// The statements of the hottest loops and requests, for their query plans'
// test.
var (
	CancelSessionPurchase = cancelSessionPurchase
	ForgetSpentAssertions = forgetSpentAssertions
	ClaimPurchases        = claimPurchases("")
	ClaimEvents           = claimEvents("")
	ParkEvents            = parkEvents
	ClientEvents, _       = listEvents("x", "x")
)
