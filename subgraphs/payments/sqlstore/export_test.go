package sqlstore

// CancelSessionPurchase is the statement that cancels a closed session's
// purchase, for its query plan's test.
const CancelSessionPurchase = cancelSessionPurchase
