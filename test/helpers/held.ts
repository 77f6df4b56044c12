import type { ChatMessage, LLMCallParams, ModelReply } from 'lagent-ts';
import { AsyncMockLLM, type AsyncMockLLMOptions } from 'lagent-ts/testing';

/**
 * Work held until the test releases it or its signal aborts, counting what waits. A test asserts what ran,
 * what was still waiting and in which order ("both slow calls were in the model while the fast one finished")
 * instead of how long something took, which a loaded machine stretches. Work that is never released ends only
 * by its signal: a cancellation that does not reach it hangs the test, which its timeout then fails.
 */
export class Held {
  /** Waits begun so far. */
  started = 0;
  readonly #pending = new Set<() => void>();
  readonly #watchers: { count: number; resolve: () => void }[] = [];

  /** Waits pending now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Resolves to `value` once released; rejects with the signal's reason when it aborts first. */
  wait<T>(value: T, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const release = () => {
        this.#pending.delete(release);
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const onAbort = () => {
        this.#pending.delete(release);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.add(release);
      this.started++;
      this.#notify();
    });
  }

  /** Resolves once `count` waits are pending at the same time. */
  until(count: number): Promise<void> {
    if (this.#pending.size >= count) return Promise.resolve();
    return new Promise((resolve) => this.#watchers.push({ count, resolve }));
  }

  /** Settles every wait pending now. */
  release(): void {
    for (const release of [...this.#pending]) release();
  }

  #notify(): void {
    for (let i = this.#watchers.length - 1; i >= 0; i--) {
      const watcher = this.#watchers[i]!;
      if (this.#pending.size >= watcher.count) {
        this.#watchers.splice(i, 1);
        watcher.resolve();
      }
    }
  }
}

/**
 * An {@link AsyncMockLLM} whose every request waits in {@link held} until the test releases it (or the
 * request's signal aborts) before it answers its scripted reply.
 */
export class HeldLLM extends AsyncMockLLM {
  readonly held = new Held();

  constructor(options: Omit<AsyncMockLLMOptions, 'latencyMs'>) {
    super(options);
  }

  override async chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    const text = await super.chat(messages, params);
    return this.held.wait(text, params?.signal);
  }

  override async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    const reply = await super.generate(messages, params);
    return this.held.wait(reply, params?.signal);
  }
}
