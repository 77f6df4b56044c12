import { type APIMetaTemplate, APITemplateParser, DEFAULT_API_META_TEMPLATE } from './api-template-parser';
import { addExtraBody } from './extra-body';
import { type LMMetaTemplate, LMTemplateParser } from './lm-template-parser';
import {
  type CompletionRequest,
  type OpenAICallParams,
  OpenAICompatibleLLM,
  type OpenAICompatibleOptions,
} from './openai-compatible-llm';
import type { ChatMessage, ResolvedGenParams } from './types';

/** Options of the self-hosted model clients (`AsyncVllmModel`, `AsyncLMDeployServer`, and their sync twins). */
export interface RawPromptModelOptions extends OpenAICompatibleOptions {
  /** The served model name (e.g. vLLM's `--served-model-name`, or the model path). */
  model: string;
  /**
   * A meta template such as `INTERNLM2_META`: the dialog is rendered into one raw prompt with it and sent to
   * `/completions`. Without it, messages go to `/chat/completions` and the server applies its chat template.
   */
  metaTemplate?: LMMetaTemplate | undefined;
  /** Role mapping for `/chat/completions`. @default DEFAULT_API_META_TEMPLATE */
  apiMetaTemplate?: APIMetaTemplate | undefined;
  /**
   * Sent as `skip_special_tokens`. @default false with a `metaTemplate` (keeps tokens like `<|plugin|>` that tool
   * parsers need), else the server's default
   */
  skipSpecialTokens?: boolean | undefined;
}

/**
 * A client of a self-hosted OpenAI-compatible server that accepts the sampling params OpenAI lacks (`top_k`,
 * `repetition_penalty`, `skip_special_tokens`): with a `metaTemplate`, Lagent's raw-prompt mode over
 * `/completions`; without, `/chat/completions`. Retries, streaming, stop words and usage work as in `AsyncGPTAPI`.
 */
export class AsyncRawPromptModel extends OpenAICompatibleLLM {
  /** The raw-prompt renderer, when a meta template is set. */
  readonly templateParser: LMTemplateParser | undefined;
  readonly #apiParser: APITemplateParser;
  readonly #skipSpecialTokens: boolean | undefined;

  constructor(options: RawPromptModelOptions, defaultBaseURL: string) {
    super(options, { baseURL: defaultBaseURL, apiKey: 'EMPTY' });
    this.templateParser = options.metaTemplate ? new LMTemplateParser(options.metaTemplate) : undefined;
    this.#apiParser = new APITemplateParser(options.apiMetaTemplate ?? DEFAULT_API_META_TEMPLATE);
    this.#skipSpecialTokens = options.skipSpecialTokens ?? (options.metaTemplate ? false : undefined);
  }

  protected buildRequest(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: OpenAICallParams,
  ): CompletionRequest {
    const body: Record<string, unknown> = { model: this.model };
    let endpoint: CompletionRequest['endpoint'];
    if (this.templateParser) {
      endpoint = 'completions';
      body.prompt = this.templateParser.parse(messages);
    } else {
      endpoint = 'chat';
      body.messages = this.#apiParser.parse(messages);
      if (call.jsonMode) body.response_format = { type: 'json_object' };
    }
    body.max_tokens = params.maxNewTokens;
    body.temperature = params.temperature;
    body.top_p = params.topP;
    body.top_k = params.topK;
    body.repetition_penalty = params.repetitionPenalty;
    if (params.stopWords.length > 0) body.stop = [...params.stopWords];
    if (this.#skipSpecialTokens !== undefined) body.skip_special_tokens = this.#skipSpecialTokens;
    addExtraBody(this.clientName, body, this.extraBody, call.extraBody);
    return { endpoint, body };
  }
}

/**
 * A client of vLLM's OpenAI-compatible server (`vllm serve <model>`), Lagent's `VllmModel` as a network client.
 *
 * @example
 * const llm = new AsyncVllmModel({ model: 'internlm/internlm2_5-7b-chat', metaTemplate: INTERNLM2_META, stopWords: ['<|im_end|>'] });
 */
export class AsyncVllmModel extends AsyncRawPromptModel {
  /** @param options `baseURL` defaults to `http://127.0.0.1:8000/v1`. */
  constructor(options: RawPromptModelOptions) {
    super(options, 'http://127.0.0.1:8000/v1');
  }
}

/**
 * A client of LMDeploy's OpenAI-compatible server (`lmdeploy serve api_server <model>`), Lagent's
 * `LMDeployServer` over `/v1/completions` (with a meta template) or `/v1/chat/completions`.
 *
 * @example
 * const llm = new AsyncLMDeployServer({ model: 'internlm2_5-7b-chat', metaTemplate: INTERNLM2_META, stopWords: ['<|im_end|>'] });
 */
export class AsyncLMDeployServer extends AsyncRawPromptModel {
  /** @param options `baseURL` defaults to `http://127.0.0.1:23333/v1`. */
  constructor(options: RawPromptModelOptions) {
    super(options, 'http://127.0.0.1:23333/v1');
  }
}
