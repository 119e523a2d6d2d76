package limits

// Prepared is an operation's verdict computed once, for a document the router
// keeps (a persisted or trusted document): every check that does not depend on
// the variables, done when it is prepared, and kept by its holder rather than
// in the analyzer's cache, which any stream of distinct operations churns.
type Prepared struct {
	a  *Analyzer
	an *analysis
}

// Prepare runs every check of Check that does not depend on variables (the
// text's bounds, parsing, validation, depth, aliases, root fields, and the
// cost when no variable sizes a list).
func (a *Analyzer) Prepare(query, operationName string) *Prepared {
	an := a.analyze(query, operationName)
	if an.rejection != nil || an.costFixed {
		an.doc, an.op = nil, nil // only the cost walk of variables needs them
	}
	an.bytes = int64(len(query))
	if an.doc != nil {
		an.bytes *= docBytesPerByte
	}
	return &Prepared{a: a, an: an}
}

// Check completes the verdict with the operation's variables, as
// Analyzer.Check would.
func (p *Prepared) Check(variables map[string]any) (Measure, error) {
	return p.a.verdict(p.an, variables)
}

// Bytes estimates what the verdict holds (its parsed document, when the cost
// depends on variables), for a cache's bound.
func (p *Prepared) Bytes() int64 { return p.an.bytes }

// Err is the refusal that does not depend on variables, or nil.
func (p *Prepared) Err() error {
	if p.an.rejection != nil {
		return p.an.rejection
	}
	return nil
}
