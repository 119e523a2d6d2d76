import { Environment, Network, RecordSource, Store, type FetchFunction } from 'relay-runtime';

// createEnvironment talks to Vitola's /graphql with a developer key (a
// publishable key in a browser) and, for the connected user's data, an OAuth
// access token with the scopes the fields need (humidor:read for myHumidors).
export function createEnvironment(url: string, key: string, accessToken?: string): Environment {
  const fetchQuery: FetchFunction = async (operation, variables) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-service-key': key };
    if (accessToken) headers.authorization = `Bearer ${accessToken}`;
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: operation.text, operationName: operation.name, variables }),
    });
    return res.json();
  };
  return new Environment({ network: Network.create(fetchQuery), store: new Store(new RecordSource()) });
}
