import { locateBridge } from '../bridge/location';
import { SyncBridge } from '../bridge/sync-bridge';
import {
  type FakeAnthropicOptions,
  type FakeAnthropicReply,
  type FakeAnthropicRequest,
  type FakeAnthropicServer,
  startFakeAnthropic,
} from './fake-anthropic';

/** Options of {@link startFakeAnthropicWorker}: like `startFakeAnthropic`, but the script must be data. */
export interface FakeAnthropicWorkerOptions extends Omit<FakeAnthropicOptions, 'script'> {
  script?: string | FakeAnthropicReply | readonly (string | FakeAnthropicReply)[] | undefined;
}

/** A fake Anthropic server running in the sync bridge's worker thread; every method is synchronous. */
export interface FakeAnthropicWorkerServer {
  readonly url: string;
  readonly baseURL: string;
  /** A copy of every request received so far. */
  requests(): FakeAnthropicRequest[];
  /** Replaces the script and restarts its request index at 0. */
  setScript(script: NonNullable<FakeAnthropicWorkerOptions['script']>): void;
  /** Stops the server. */
  close(): void;
}

/**
 * Hosts a fake Anthropic server inside the sync bridge's worker (used by {@link startFakeAnthropicWorker}); not
 * meant to be constructed directly.
 */
export class FakeAnthropicHost {
  #server: FakeAnthropicServer | undefined;
  readonly #options: FakeAnthropicOptions;

  constructor(options: FakeAnthropicOptions) {
    this.#options = options;
  }

  /** Starts the server; returns its URL. */
  async start(): Promise<string> {
    this.#server ??= await startFakeAnthropic(this.#options);
    return this.#server.url;
  }

  /** The requests received so far. */
  requests(): FakeAnthropicRequest[] {
    return this.#server?.requests ?? [];
  }

  /** Replaces the script. */
  setScript(script: NonNullable<FakeAnthropicOptions['script']>): void {
    this.#server?.setScript(script);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}

/**
 * Starts {@link startFakeAnthropic}'s server on another thread (the sync bridge's worker), so that the sync
 * `ClaudeAPI`, which blocks the calling thread, can be tested against it from the same test.
 *
 * @example
 * const server = startFakeAnthropicWorker({ script: ['Hello!'] });
 * const llm = new ClaudeAPI({ apiKey: 'sk-test', baseURL: server.baseURL });
 * llm.chat([{ role: 'user', content: 'hi' }]); // 'Hello!'
 * server.requests()[0].body.max_tokens; // 4096
 * server.close();
 */
export function startFakeAnthropicWorker(
  options: FakeAnthropicWorkerOptions = {},
): FakeAnthropicWorkerServer {
  const bridge = new SyncBridge({
    module: locateBridge().hosts,
    exportName: 'FakeAnthropicHost',
    args: [options],
  });
  const url = bridge.call<string>('start');
  return {
    url,
    baseURL: url,
    requests: () => bridge.call<FakeAnthropicRequest[]>('requests'),
    setScript: (script) => bridge.call('setScript', [script]),
    close: () => {
      bridge.call('close');
      bridge.close();
    },
  };
}
