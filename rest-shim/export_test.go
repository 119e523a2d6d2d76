package restshim

// CatalogOperations exposes the internal operations to the black-box tests.
var CatalogOperations = catalogOperations
