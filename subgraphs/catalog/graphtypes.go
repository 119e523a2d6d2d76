package catalog

// Marker methods gqlgen binds to: the domain types are the GraphQL objects, so
// they declare themselves Nodes (the Node interface) and federation entities.

func (Brand) IsNode()           {}
func (b Brand) GetID() string   { return b.ID }
func (Brand) IsEntity()         {}
func (Cigar) IsNode()           {}
func (c Cigar) GetID() string   { return c.ID }
func (Cigar) IsEntity()         {}
func (Product) IsNode()         {}
func (p Product) GetID() string { return p.ID }
func (Product) IsEntity()       {}
