import type { AISDKLanguageModel } from './ai-sdk-types';
import { type AISDKCallParams, type AISDKModelOptions, AsyncAISDKModel } from './async-ai-sdk-model';
import type { ChatMessage, ModelReply, StreamChunk } from './types';
import type { TokenUsage } from './usage';

/** Where the sync `AISDKModel`'s worker finds the model: a module and the name of its export. */
export interface AISDKModelModule {
  /** Absolute path or `file:` URL of the module (or a package name the worker can import). */
  module: string;
  /** The export holding the model, or a function (possibly async) returning it. @default 'default' */
  exportName?: string | undefined;
}

/** The options the sync bridge's worker receives (structured-cloneable: the model is named, not passed). */
export interface AISDKModelHostOptions extends Omit<AISDKModelOptions, 'model'> {
  model: AISDKModelModule;
}

/**
 * Hosts an {@link AsyncAISDKModel} in the sync bridge's worker for the sync `AISDKModel`: a model object cannot
 * cross threads, so the worker imports the module that exports it on the first call (`describe`). Not meant to
 * be constructed directly.
 */
export class AISDKModelHost {
  readonly #options: AISDKModelHostOptions;
  #client: Promise<AsyncAISDKModel> | undefined;

  constructor(options: AISDKModelHostOptions) {
    this.#options = options;
  }

  /** The model id and provider, once the module is loaded. */
  async describe(): Promise<{ model: string; baseURL: string }> {
    return (await this.#load()).describe();
  }

  async chat(messages: ChatMessage[], params?: AISDKCallParams): Promise<string> {
    return (await this.#load()).chat(messages, params);
  }

  async generate(messages: ChatMessage[], params?: AISDKCallParams): Promise<ModelReply> {
    return (await this.#load()).generate(messages, params);
  }

  async *streamChat(
    messages: ChatMessage[],
    params?: AISDKCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    yield* (await this.#load()).streamChat(messages, params);
  }

  async getUsage(sessionId?: AISDKCallParams['sessionId']): Promise<TokenUsage> {
    return (await this.#load()).getUsage(sessionId);
  }

  async getTotalUsage(): Promise<TokenUsage> {
    return (await this.#load()).getTotalUsage();
  }

  async getRetryCount(): Promise<number> {
    return (await this.#load()).getRetryCount();
  }

  async getLastUsage(): Promise<TokenUsage | undefined> {
    return (await this.#load()).getLastUsage();
  }

  async resetUsage(sessionId?: AISDKCallParams['sessionId']): Promise<void> {
    (await this.#load()).resetUsage(sessionId);
  }

  #load(): Promise<AsyncAISDKModel> {
    this.#client ??= (async () => {
      const { model: source, ...options } = this.#options;
      const exportName = source.exportName ?? 'default';
      const loaded = (await import(source.module)) as Record<string, unknown>;
      let model = loaded[exportName];
      if (typeof model === 'function') model = await (model as () => unknown)();
      if (model === undefined) {
        throw new TypeError(`${source.module} does not export ${exportName}`);
      }
      return new AsyncAISDKModel({ ...options, model: model as AISDKLanguageModel });
    })();
    return this.#client;
  }
}
