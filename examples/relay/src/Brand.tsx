import { graphql, useLazyLoadQuery, usePaginationFragment } from 'react-relay';
import type { BrandQuery } from './__generated__/BrandQuery.graphql';
import type { BrandCigarsPaginationQuery } from './__generated__/BrandCigarsPaginationQuery.graphql';
import type { Brand_cigarList$key } from './__generated__/Brand_cigarList.graphql';

// Brand: a brand's cigars, paged with Brand.cigars (its pagination query
// refetches the brand through node(id:)).
export function Brand({ id }: { id: string }) {
  const data = useLazyLoadQuery<BrandQuery>(
    graphql`
      query BrandQuery($id: ID!) {
        brand(id: $id) {
          name
          country
          ...Brand_cigarList
        }
      }
    `,
    { id },
  );
  if (!data.brand) return <p>No such brand.</p>;
  return (
    <section>
      <h2>
        {data.brand.name} {data.brand.country && `(${data.brand.country})`}
      </h2>
      <CigarList brand={data.brand} />
    </section>
  );
}

function CigarList({ brand }: { brand: Brand_cigarList$key }) {
  const { data, loadNext, hasNext } = usePaginationFragment<BrandCigarsPaginationQuery, Brand_cigarList$key>(
    graphql`
      fragment Brand_cigarList on Brand
      @refetchable(queryName: "BrandCigarsPaginationQuery")
      @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }) {
        cigars(first: $count, after: $cursor) @connection(key: "Brand_cigars") {
          edges {
            node {
              id
              name
              wrapper {
                label
              }
            }
          }
        }
      }
    `,
    brand,
  );
  return (
    <>
      <ul>
        {data.cigars.edges.map(({ node }) => (
          <li key={node.id}>
            {node.name} {node.wrapper.map((w) => w.label).join(', ')}
          </li>
        ))}
      </ul>
      {hasNext && <button onClick={() => loadNext(20)}>More cigars</button>}
    </>
  );
}
