import { graphql, useRefetchableFragment } from 'react-relay';
import type { HumidorCardRefetchQuery } from './__generated__/HumidorCardRefetchQuery.graphql';
import type { HumidorCard_humidor$key } from './__generated__/HumidorCard_humidor.graphql';

// HumidorCard: one humidor, refetched on its own through node(id:) (Humidor
// is a Node; node answers it to its owner only).
export function HumidorCard({ humidor }: { humidor: HumidorCard_humidor$key }) {
  const [data, refetch] = useRefetchableFragment<HumidorCardRefetchQuery, HumidorCard_humidor$key>(
    graphql`
      fragment HumidorCard_humidor on Humidor @refetchable(queryName: "HumidorCardRefetchQuery") {
        id
        name
        items {
          quantity
          addedAt
          cigar {
            name
          }
        }
      }
    `,
    humidor,
  );
  return (
    <article>
      <h3>{data.name}</h3>
      <ul>
        {data.items.map((it, i) => (
          <li key={i}>
            {it.quantity} × {it.cigar.name}
          </li>
        ))}
      </ul>
      <button onClick={() => refetch({}, { fetchPolicy: 'network-only' })}>Refresh</button>
    </article>
  );
}
