import { graphql, useLazyLoadQuery, usePaginationFragment } from 'react-relay';
import type { VenueQuery } from './__generated__/VenueQuery.graphql';
import type { VenueEventsPaginationQuery } from './__generated__/VenueEventsPaginationQuery.graphql';
import type { Venue_eventList$key } from './__generated__/Venue_eventList.graphql';

// Venue: a venue's events, soonest first, paged in both directions (last and
// before page backwards; pageInfo has hasPreviousPage and startCursor).
export function Venue({ id, after }: { id: string; after?: string }) {
  const data = useLazyLoadQuery<VenueQuery>(
    graphql`
      query VenueQuery($id: ID!, $after: String) {
        venue(id: $id) {
          name
          city
          ...Venue_eventList @arguments(after: $after)
        }
      }
    `,
    { id, after },
  );
  if (!data.venue) return <p>No such venue.</p>;
  return (
    <section>
      <h2>
        {data.venue.name}, {data.venue.city}
      </h2>
      <EventList venue={data.venue} />
    </section>
  );
}

function EventList({ venue }: { venue: Venue_eventList$key }) {
  const { data, loadNext, hasNext, loadPrevious, hasPrevious } = usePaginationFragment<VenueEventsPaginationQuery, Venue_eventList$key>(
    graphql`
      fragment Venue_eventList on Venue
      @refetchable(queryName: "VenueEventsPaginationQuery")
      @argumentDefinitions(
        first: { type: "Int", defaultValue: 5 }
        after: { type: "String" }
        last: { type: "Int" }
        before: { type: "String" }
      ) {
        events(first: $first, after: $after, last: $last, before: $before) @connection(key: "Venue_events") {
          edges {
            node {
              id
              name
              startsAt
              brand {
                name
              }
            }
          }
        }
      }
    `,
    venue,
  );
  return (
    <>
      {hasPrevious && <button onClick={() => loadPrevious(5)}>Earlier events</button>}
      <ul>
        {data.events.edges.map(({ node }) => (
          <li key={node.id}>
            {node.startsAt}: {node.name}
            {node.brand && ` (${node.brand.name})`}
          </li>
        ))}
      </ul>
      {hasNext && <button onClick={() => loadNext(5)}>Later events</button>}
    </>
  );
}
