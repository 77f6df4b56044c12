import { fileURLToPath } from 'node:url';
import { SyncBridge } from '../../../../src/bridge/sync-bridge';
import type { FakeHttpServer, RecordedRequest, Reply } from '../../../helpers/http-server';
import { startFakeBingMaps } from './bing-maps';
import { startFakeSerpApi } from './serpapi';
import { startFakeSerper } from './serper';

/** The fakes a worker can host. */
export type FakeKind = 'serper' | 'serpapi' | 'bing-maps';

const STARTERS: Record<FakeKind, () => Promise<FakeHttpServer>> = {
  serper: startFakeSerper,
  serpapi: startFakeSerpApi,
  'bing-maps': startFakeBingMaps,
};

/** Hosts one fake service inside the sync bridge's worker thread (see {@link startFakeServiceWorker}). */
export class FakeServiceHost {
  readonly #kind: FakeKind;
  #service: FakeHttpServer | undefined;

  constructor(kind: FakeKind) {
    this.#kind = kind;
  }

  async start(): Promise<string> {
    this.#service ??= await STARTERS[this.#kind]();
    return this.#service.url;
  }

  requests(): RecordedRequest[] {
    return this.#service?.requests ?? [];
  }

  queue(replies: Reply[]): void {
    this.#service?.queue(...replies);
  }

  async close(): Promise<void> {
    await this.#service?.close();
    this.#service = undefined;
  }
}

/** A fake service on another thread, for the sync tools (a sync call blocks the test's own thread). */
export interface FakeServiceWorker {
  readonly url: string;
  requests(): RecordedRequest[];
  queue(...replies: Reply[]): void;
  close(): void;
}

/** Starts a fake service in the sync bridge's worker thread; every method is synchronous. */
export function startFakeServiceWorker(kind: FakeKind): FakeServiceWorker {
  const bridge = new SyncBridge({
    module: fileURLToPath(new URL('./service-host.ts', import.meta.url)),
    exportName: 'FakeServiceHost',
    args: [kind],
  });
  const url = bridge.call<string>('start');
  return {
    url,
    requests: () => bridge.call<RecordedRequest[]>('requests'),
    queue: (...replies) => {
      bridge.call('queue', [replies]);
    },
    close: () => {
      try {
        bridge.call('close');
      } finally {
        bridge.close();
      }
    },
  };
}
