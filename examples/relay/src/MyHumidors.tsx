import { graphql, useLazyLoadQuery, usePaginationFragment } from 'react-relay';
import type { MyHumidorsQuery } from './__generated__/MyHumidorsQuery.graphql';
import type { MyHumidorsPaginationQuery } from './__generated__/MyHumidorsPaginationQuery.graphql';
import type { MyHumidors_list$key } from './__generated__/MyHumidors_list.graphql';
import { HumidorCard } from './HumidorCard';

// MyHumidors: the connected user's humidors (an access token with
// humidor:read; without one, myHumidors is null with an error).
export function MyHumidors() {
  const data = useLazyLoadQuery<MyHumidorsQuery>(
    graphql`
      query MyHumidorsQuery {
        ...MyHumidors_list
      }
    `,
    {},
  );
  return <HumidorList query={data} />;
}

function HumidorList({ query }: { query: MyHumidors_list$key }) {
  const { data, loadNext, hasNext } = usePaginationFragment<MyHumidorsPaginationQuery, MyHumidors_list$key>(
    graphql`
      fragment MyHumidors_list on Query
      @refetchable(queryName: "MyHumidorsPaginationQuery")
      @argumentDefinitions(count: { type: "Int", defaultValue: 5 }, cursor: { type: "String" }) {
        myHumidors(first: $count, after: $cursor) @connection(key: "MyHumidors_myHumidors") {
          edges {
            node {
              id
              ...HumidorCard_humidor
            }
          }
        }
      }
    `,
    query,
  );
  if (!data.myHumidors) return <p>Sign in to see your humidors.</p>;
  return (
    <section>
      {data.myHumidors.edges.map(({ node }) => (
        <HumidorCard key={node.id} humidor={node} />
      ))}
      {hasNext && <button onClick={() => loadNext(5)}>More humidors</button>}
    </section>
  );
}
