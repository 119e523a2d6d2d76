// relay-compiler reads these documents and writes their artifacts to
// __generated__ (relay.mjs runs them); this file itself is never run.
// The brands come first; each brand's name and events (another subgraph's)
// come later, in a deferred part.

graphql`
  query DeferBrandsQuery {
    brands(first: 2) {
      edges {
        node {
          id
          ...DeferBrands_feeds @defer(label: "feeds")
        }
      }
    }
  }
`;

graphql`
  fragment DeferBrands_feeds on Brand {
    name
    events(first: 1) {
      edges {
        node {
          id
          name
        }
      }
    }
  }
`;
