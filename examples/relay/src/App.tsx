import { Suspense } from 'react';
import { RelayEnvironmentProvider } from 'react-relay';
import { Brand } from './Brand';
import { createEnvironment } from './environment';
import { MyHumidors } from './MyHumidors';
import { Search } from './Search';
import { Venue } from './Venue';

// App puts the pieces on one page. Bundle it with any React toolchain that runs
// babel-plugin-relay (or @swc/plugin-relay); this example only compiles it.
export function App(props: { url: string; apiKey: string; accessToken?: string; brandId: string; venueId: string }) {
  const environment = createEnvironment(props.url, props.apiKey, props.accessToken);
  return (
    <RelayEnvironmentProvider environment={environment}>
      <Suspense fallback={<p>Loading…</p>}>
        <Search text="padron" />
        <Brand id={props.brandId} />
        <Venue id={props.venueId} />
        {props.accessToken && <MyHumidors />}
      </Suspense>
    </RelayEnvironmentProvider>
  );
}
