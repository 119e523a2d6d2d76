// Relay receiving a deferred query from Vitola's /graphql through a multipart
// network layer (meros reads the parts): node relay.mjs <graphql URL> <developer key>
// It prints, as JSON, the brands in Relay's store after each payload Relay
// took: ids first, then each brand's name and events once the deferred part
// arrived. With VITOLA_SEEN_URL set it GETs that URL once it has the initial
// payload (the Go test holds the deferred part until then).
import { meros } from 'meros/browser';
import { Environment, Network, Observable, RecordSource, Store, createOperationDescriptor } from 'relay-runtime';
import query from './src/__generated__/DeferBrandsQuery.graphql.js';

const [url, key] = process.argv.slice(2);

// fetchMultipart asks for incremental delivery and hands Relay each part:
// the initial payload as it is, each incremental item as a payload of its
// own ({data, label, path}), which is what Relay's executor reads.
function fetchMultipart(params, variables) {
  return Observable.create((sink) => {
    const abort = new AbortController();
    (async () => {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          accept: 'multipart/mixed;deferSpec=20220824, application/json',
          'content-type': 'application/json',
          'x-service-key': key,
        },
        body: JSON.stringify({ query: params.text, operationName: params.name, variables }),
        signal: abort.signal,
      });
      const parts = await meros(res);
      if (parts instanceof Response) { // not deferred: one ordinary response
        sink.next(await parts.json());
        sink.complete();
        return;
      }
      for await (const part of parts) {
        if (!part.json) throw new Error(`a part that is not JSON: ${part.body}`);
        const { data, errors, incremental, hasNext } = part.body;
        const extensions = { is_final: !hasNext };
        if (incremental) {
          sink.next(incremental.map((item) => ({ data: item.data, errors: item.errors, label: item.label, path: item.path, extensions })));
        } else if (data !== undefined) {
          sink.next({ data, errors, extensions });
        }
      }
      sink.complete();
    })().catch((e) => sink.error(e));
    return () => abort.abort();
  });
}

const environment = new Environment({ network: Network.create(fetchMultipart), store: new Store(new RecordSource()) });
const operation = createOperationDescriptor(query, {});

// The brands as the store holds them: the deferred fields are absent until
// their part is in.
function brands() {
  const source = environment.getStore().getSource();
  const root = source.get('client:root');
  const conn = source.get(root?.['brands(first:2)']?.__ref);
  return (conn?.edges?.__refs ?? []).map((edgeRef) => {
    const node = source.get(source.get(edgeRef)?.node?.__ref);
    const events = source.get(node?.['events(first:1)']?.__ref);
    return { id: node?.id, name: node?.name ?? null, events: events ? (events.edges?.__refs ?? []).length : null };
  });
}

const steps = [];
await new Promise((resolve, reject) => {
  environment.execute({ operation }).subscribe({
    next() {
      steps.push(brands());
      if (steps.length === 1 && process.env.VITOLA_SEEN_URL) fetch(process.env.VITOLA_SEEN_URL).catch(reject);
    },
    error: reject,
    complete: resolve,
  });
});
console.log(JSON.stringify(steps));
