import { type ResponseFormat, strictJSONSchema } from '../schema/response-format';
import { type APIMetaTemplate, APITemplateParser, DEFAULT_API_META_TEMPLATE } from './api-template-parser';
import { addExtraBody } from './extra-body';
import {
  type CompletionRequest,
  type OpenAICallParams,
  OpenAICompatibleLLM,
  type OpenAICompatibleOptions,
} from './openai-compatible-llm';
import type { ChatMessage, ResolvedGenParams } from './types';

/**
 * A `responseFormat` as chat completions' `response_format`: `json_schema` with the strict form of the schema
 * (`strict: true` unless the schema cannot be strict), or `json_object` without a schema.
 */
export function openAIResponseFormat(format: ResponseFormat): Record<string, unknown> {
  const strict = strictJSONSchema(format);
  if (strict === undefined) return { type: 'json_object' };
  const jsonSchema: Record<string, unknown> = {
    name: strict.name,
    schema: strict.schema,
    strict: strict.strict,
  };
  if (strict.description !== undefined) jsonSchema.description = strict.description;
  return { type: 'json_schema', json_schema: jsonSchema };
}

/** Options of {@link AsyncGPTAPI} and `GPTAPI`. */
export interface GPTAPIOptions extends OpenAICompatibleOptions {
  /** @default 'gpt-4o-mini' */
  model?: string | undefined;
  /** @default process.env.OPENAI_API_KEY (any placeholder when a custom baseURL is set) */
  apiKey?: string | readonly string[] | undefined;
  /** @default process.env.OPENAI_BASE_URL, else 'https://api.openai.com/v1' */
  baseURL?: string | undefined;
  /** Role mapping to the API's roles. @default DEFAULT_API_META_TEMPLATE (environment -> system) */
  metaTemplate?: APIMetaTemplate | undefined;
  /** Ask for JSON object replies (`response_format: { type: 'json_object' }`). @default false */
  jsonMode?: boolean | undefined;
  /**
   * Which body field carries `maxNewTokens`. @default 'max_completion_tokens' for reasoning models
   * (o1, o3, o4, gpt-5...), else 'max_tokens'
   */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens' | undefined;
}

/** OpenAI's reasoning models take `max_completion_tokens` and reject sampling params and `stop`. */
const REASONING_MODEL = /^(o\d|gpt-5)/i;

/** OpenAI accepts at most four stop sequences; the rest are still cut client-side. */
const MAX_STOP_SEQUENCES = 4;

/**
 * A client of OpenAI's chat completions API, or any compatible server (vLLM, LMDeploy, Ollama, SGLang,
 * LiteLLM, hosted providers): any model name works.
 *
 * Params map to the API as `maxNewTokens -> max_tokens` (or `max_completion_tokens`), `stopWords -> stop`,
 * `topP -> top_p`, `temperature`, and `repetitionPenalty -> frequency_penalty` (as `repetitionPenalty - 1`,
 * sent only when it is not the neutral 1), `reasoning.effort -> reasoning_effort`, and a `responseFormat` with a
 * schema -> a strict `json_schema` response format. `topK` is not an OpenAI parameter: send it with
 * `extraBody: { top_k: 40 }` to servers that take it. Roles go through `metaTemplate` (tool results, role
 * `environment`, are sent as `system`), merging consecutive messages of the same API role.
 *
 * Failed requests are retried (429, 5xx, connection resets, timeouts; honouring `retry-after-ms` /
 * `retry-after`), then throw `LLMRequestError` with `status` and `attempts`. `signal` aborts at once.
 *
 * @example
 * const llm = new AsyncGPTAPI({ model: 'gpt-4o-mini', stopWords: ['<|im_end|>'] });
 * const text = await llm.chat([{ role: 'user', content: 'hi' }], { sessionId: 1 });
 * for await (const chunk of llm.streamChat([{ role: 'user', content: 'hi' }])) process.stdout.write(chunk.delta);
 * llm.getUsage(1); // { promptTokens, completionTokens, totalTokens }
 */
export class AsyncGPTAPI extends OpenAICompatibleLLM {
  /** Whether replies are requested as JSON objects. */
  readonly jsonMode: boolean;
  /** The body field that carries `maxNewTokens`. */
  readonly maxTokensField: 'max_tokens' | 'max_completion_tokens';
  readonly #parser: APITemplateParser;
  readonly #reasoning: boolean;

  constructor(options: GPTAPIOptions = {}) {
    const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
    const apiKey = options.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
    super(
      { ...options, apiKey },
      {
        model: 'gpt-4o-mini',
        baseURL: baseURL ?? 'https://api.openai.com/v1',
        // Local and self-hosted servers usually take any key.
        ...(baseURL !== undefined ? { apiKey: 'EMPTY' } : {}),
      },
    );
    this.jsonMode = options.jsonMode ?? false;
    this.#parser = new APITemplateParser(options.metaTemplate ?? DEFAULT_API_META_TEMPLATE);
    this.#reasoning = REASONING_MODEL.test(this.model);
    this.maxTokensField =
      options.maxTokensField ?? (this.#reasoning ? 'max_completion_tokens' : 'max_tokens');
  }

  protected buildRequest(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: OpenAICallParams,
  ): CompletionRequest {
    const body: Record<string, unknown> = { model: this.model, messages: this.#parser.parse(messages) };
    body[this.maxTokensField] = params.maxNewTokens;
    if (!this.#reasoning) {
      body.temperature = params.temperature;
      body.top_p = params.topP;
      if (params.repetitionPenalty !== 1) {
        body.frequency_penalty = Math.max(-2, Math.min(2, params.repetitionPenalty - 1));
      }
      if (params.stopWords.length > 0) body.stop = params.stopWords.slice(0, MAX_STOP_SEQUENCES);
    }
    const format = call.responseFormat;
    if (format !== undefined) body.response_format = openAIResponseFormat(format);
    else if (call.jsonMode ?? this.jsonMode) body.response_format = { type: 'json_object' };
    const effort = params.reasoning?.effort;
    if (effort !== undefined) body.reasoning_effort = effort;
    addExtraBody(this.clientName, body, this.extraBody, call.extraBody);
    return { endpoint: 'chat', body };
  }
}
