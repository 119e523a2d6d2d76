// Apollo Client receiving a deferred query from Vitola's /graphql, with its
// deferSpec=20220824 handler: node apollo.mjs <graphql URL> <developer key>
// It prints, as JSON, every result the client gave: the brands first, then
// each brand's name and events once the deferred part arrived. With
// VITOLA_SEEN_URL set it GETs that URL once it has the initial payload (the
// Go test holds the deferred part until then).
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';

const [url, key] = process.argv.slice(2);
const client = new ApolloClient({
  link: new HttpLink({ uri: url, headers: { 'x-service-key': key } }),
  cache: new InMemoryCache(),
  incrementalHandler: new Defer20220824Handler(),
});

const query = gql`
  query DeferredBrands {
    brands(first: 2) {
      edges {
        node {
          id
          ... @defer(label: "feeds") {
            name
            events(first: 1) { edges { node { id name } } }
          }
        }
      }
    }
  }
`;

const results = [];
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no complete result in 30 s: ${JSON.stringify(results)}`)), 30_000);
  const sub = client.watchQuery({ query, fetchPolicy: 'network-only' }).subscribe({
    next(r) {
      results.push({ dataState: r.dataState, error: r.error?.message, data: r.data ?? null });
      if (r.dataState === 'streaming' && process.env.VITOLA_SEEN_URL) fetch(process.env.VITOLA_SEEN_URL).catch(reject);
      if (r.dataState === 'complete' || r.error) {
        clearTimeout(timer);
        sub.unsubscribe();
        resolve();
      }
    },
    error(e) {
      clearTimeout(timer);
      reject(e);
    },
  });
});
console.log(JSON.stringify(results));
