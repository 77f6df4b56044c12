import type { RawPromptModelOptions } from './async-raw-prompt-model';
import { BridgedLLM } from './bridged-llm';

/**
 * The sync twin of {@link AsyncVllmModel}, through the sync bridge (the calling thread blocks while it waits).
 *
 * @example
 * const llm = new VllmModel({ model: 'internlm/internlm2_5-7b-chat', metaTemplate: INTERNLM2_META, stopWords: ['<|im_end|>'] });
 * llm.chat([{ role: 'user', content: 'hi' }]);
 */
export class VllmModel extends BridgedLLM {
  constructor(options: RawPromptModelOptions) {
    super('AsyncVllmModel', options);
  }
}

/** The sync twin of {@link AsyncLMDeployServer}, through the sync bridge (the calling thread blocks while it waits). */
export class LMDeployServer extends BridgedLLM {
  constructor(options: RawPromptModelOptions) {
    super('AsyncLMDeployServer', options);
  }
}
