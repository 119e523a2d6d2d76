package subgraph

// What the black-box tests check of the hand-over to a subgraph in process.
var (
	HandedOver = handedOver
	JSONValue  = jsonValue
)
