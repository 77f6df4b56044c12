import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { locateBridge } from '../bridge/location';
import { ConfigurationError } from '../schema/errors';
import type { AISDKModelHostOptions } from './ai-sdk-model-host';
import type { AISDKModelOptions } from './async-ai-sdk-model';
import { BridgedLLM } from './bridged-llm';

/** Options of {@link AISDKModel}: those of `AsyncAISDKModel`, with the model named by the module exporting it. */
export interface AISDKModelSyncOptions extends Omit<AISDKModelOptions, 'model'> {
  /**
   * The module that exports the AI SDK model (or a function, possibly async, returning it): a path (relative
   * paths from the working directory), a `file:` URL or a package name, and the export's name. A model object
   * cannot cross into the worker thread that runs the requests, so the worker imports it there.
   */
  model: { module: string | URL; exportName?: string | undefined };
}

/**
 * The sync twin of {@link AsyncAISDKModel}: the same client run in a worker thread behind the sync bridge, so
 * `chat()` returns a string, `generate()` a `ModelReply` and `streamChat()` is a plain generator; it works in
 * `FunctionCallingAgent`. The worker imports the model from the module you name. The calling thread blocks
 * while it waits: use it in scripts, sync agents and tests, and `AsyncAISDKModel` in servers.
 *
 * @example
 * // models.mjs: import { createOpenAI } from '@ai-sdk/openai'; export default createOpenAI()('gpt-4o-mini');
 * const llm = new AISDKModel({ model: { module: './models.mjs' } });
 * llm.chat([{ role: 'user', content: 'hi' }]);
 */
export class AISDKModel extends BridgedLLM {
  constructor(options: AISDKModelSyncOptions) {
    const source = options?.model;
    const name = options?.clientName ?? new.target.name;
    if (
      source === null ||
      typeof source !== 'object' ||
      !(typeof source.module === 'string' || source.module instanceof URL)
    ) {
      throw new ConfigurationError({
        message: `${name} needs { model: { module, exportName? } }: the module exporting the AI SDK model (a model object cannot cross into the worker thread; use AsyncAISDKModel to pass one)`,
      });
    }
    const hosted: AISDKModelHostOptions = {
      ...options,
      clientName: name,
      model: { module: moduleSpecifier(source.module), exportName: source.exportName ?? 'default' },
    };
    super('AISDKModelHost', hosted as never, locateBridge().hosts);
  }
}

/** A specifier the worker can import: paths become `file:` URLs (relative ones from the working directory). */
function moduleSpecifier(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (isAbsolute(module) || module.startsWith('./') || module.startsWith('../')) {
    return pathToFileURL(resolve(module)).href;
  }
  return module;
}
