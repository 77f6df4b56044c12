import { locateBridge } from '../bridge/location';
import { SyncBridge } from '../bridge/sync-bridge';
import {
  type FakeOpenAIOptions,
  type FakeOpenAIServer,
  type FakeReply,
  type FakeRequest,
  startFakeOpenAI,
} from './fake-openai';

/** Options of {@link startFakeOpenAIWorker}: like `startFakeOpenAI`, but the script must be data (no function). */
export interface FakeOpenAIWorkerOptions extends Omit<FakeOpenAIOptions, 'script'> {
  script?: string | FakeReply | readonly (string | FakeReply)[] | undefined;
}

/** A fake server running in the sync bridge's worker thread; every method is synchronous. */
export interface FakeOpenAIWorkerServer {
  readonly url: string;
  readonly baseURL: string;
  /** A copy of every request received so far. */
  requests(): FakeRequest[];
  /** Replaces the script and restarts its request index at 0 (`requests()` keeps every request). */
  setScript(script: NonNullable<FakeOpenAIWorkerOptions['script']>): void;
  /** Stops the server. */
  close(): void;
}

/**
 * Hosts a fake server inside the sync bridge's worker (used by {@link startFakeOpenAIWorker}); not meant to be
 * constructed directly.
 */
export class FakeOpenAIHost {
  #server: FakeOpenAIServer | undefined;
  readonly #options: FakeOpenAIOptions;

  constructor(options: FakeOpenAIOptions) {
    this.#options = options;
  }

  /** Starts the server; returns its URL. */
  async start(): Promise<string> {
    this.#server ??= await startFakeOpenAI(this.#options);
    return this.#server.url;
  }

  /** The requests received so far. */
  requests(): FakeRequest[] {
    return this.#server?.requests ?? [];
  }

  /** Replaces the script. */
  setScript(script: NonNullable<FakeOpenAIOptions['script']>): void {
    this.#server?.setScript(script);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}

/**
 * Starts {@link startFakeOpenAI}'s server on another thread (the sync bridge's worker), so that a sync client
 * such as `GPTAPI`, which blocks the calling thread, can be tested against it from the same test.
 *
 * @example
 * const server = startFakeOpenAIWorker({ script: ['Hello!'] });
 * const llm = new GPTAPI({ model: 'any', apiKey: 'sk-test', baseURL: server.baseURL });
 * llm.chat([{ role: 'user', content: 'hi' }]); // 'Hello!'
 * server.requests()[0].body.model; // 'any'
 * server.close();
 */
export function startFakeOpenAIWorker(options: FakeOpenAIWorkerOptions = {}): FakeOpenAIWorkerServer {
  const bridge = new SyncBridge({
    module: locateBridge().hosts,
    exportName: 'FakeOpenAIHost',
    args: [options],
  });
  const url = bridge.call<string>('start');
  return {
    url,
    baseURL: `${url}/v1`,
    requests: () => bridge.call<FakeRequest[]>('requests'),
    setScript: (script) => bridge.call('setScript', [script]),
    close: () => {
      bridge.call('close');
      bridge.close();
    },
  };
}
