import { graphql, useLazyLoadQuery, usePaginationFragment } from 'react-relay';
import type { SearchQuery } from './__generated__/SearchQuery.graphql';
import type { SearchResultsPaginationQuery } from './__generated__/SearchResultsPaginationQuery.graphql';
import type { Search_results$key } from './__generated__/Search_results.graphql';

// Search: cigars matching a text, ten at a time (searchCigars is a Relay
// connection; its cursors are bound to the query text).
export function Search({ text }: { text: string }) {
  const data = useLazyLoadQuery<SearchQuery>(
    graphql`
      query SearchQuery($text: String!) {
        ...Search_results @arguments(text: $text)
      }
    `,
    { text },
  );
  return <SearchResults query={data} />;
}

function SearchResults({ query }: { query: Search_results$key }) {
  const { data, loadNext, hasNext, isLoadingNext } = usePaginationFragment<SearchResultsPaginationQuery, Search_results$key>(
    graphql`
      fragment Search_results on Query
      @refetchable(queryName: "SearchResultsPaginationQuery")
      @argumentDefinitions(text: { type: "String!" }, count: { type: "Int", defaultValue: 10 }, cursor: { type: "String" }) {
        searchCigars(query: $text, first: $count, after: $cursor) @connection(key: "Search_searchCigars") {
          edges {
            node {
              id
              name
              origin
              brand {
                name
              }
            }
          }
        }
      }
    `,
    query,
  );
  return (
    <section>
      <ul>
        {data.searchCigars.edges.map(({ node }) => (
          <li key={node.id}>
            {node.brand.name} {node.name} ({node.origin})
          </li>
        ))}
      </ul>
      {hasNext && (
        <button disabled={isLoadingNext} onClick={() => loadNext(10)}>
          More
        </button>
      )}
    </section>
  );
}
