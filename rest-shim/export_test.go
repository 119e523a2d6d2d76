package restshim

// CatalogOperations exposes the internal operations to the black-box tests.
var CatalogOperations = catalogOperations

// UserOperations exposes the users operations to the black-box tests.
var UserOperations = userOperations
