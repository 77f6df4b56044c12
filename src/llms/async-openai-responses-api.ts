import { type APIMetaTemplate, APITemplateParser, DEFAULT_API_META_TEMPLATE } from './api-template-parser';
import {
  type CompletionRequest,
  type OpenAICallParams,
  OpenAICompatibleLLM,
  type OpenAICompatibleOptions,
  type RequestInputs,
} from './openai-compatible-llm';
import { responsesTextFormat, toResponsesInput } from './responses-wire';
import type { ChatMessage, ResolvedGenParams } from './types';

/** Options of {@link AsyncOpenAIResponsesAPI} and `OpenAIResponsesAPI`. */
export interface OpenAIResponsesAPIOptions extends OpenAICompatibleOptions {
  /** @default 'gpt-5-mini' */
  model?: string | undefined;
  /** @default process.env.OPENAI_API_KEY (any placeholder when a custom baseURL is set) */
  apiKey?: string | readonly string[] | undefined;
  /** @default process.env.OPENAI_BASE_URL, else 'https://api.openai.com/v1' */
  baseURL?: string | undefined;
  /** Role mapping to the API's roles. @default DEFAULT_API_META_TEMPLATE (environment -> system) */
  metaTemplate?: APIMetaTemplate | undefined;
  /**
   * Let OpenAI keep the responses (`store`). lagent-ts keeps the dialog itself and sends it whole, so the default
   * stores nothing and asks for reasoning items with their encrypted content instead, which go back in the next
   * request of a tool loop. @default false
   */
  store?: boolean | undefined;
  /**
   * Ask for reasoning summaries (`reasoning.summary`), the reasoning text a reply carries. Sent to reasoning
   * models (o-series, gpt-5) and whenever `reasoning` is set. @default 'auto'
   */
  reasoningSummary?: 'auto' | 'concise' | 'detailed' | null | undefined;
}

/** OpenAI's reasoning models: they take `reasoning` and refuse sampling params. */
const REASONING_MODEL = /^(o\d|gpt-5)/i;

/**
 * A client of OpenAI's Responses API (`POST /v1/responses`), what OpenAI's own agents use and the only way to
 * keep an o-series or GPT-5 model's reasoning between the turns of a tool loop. It shares the OpenAI clients'
 * machinery (key rotation, retries, timeouts, aborts, usage per session, native function calling, streaming).
 *
 * Each request sends the whole dialog (`store: false` by default): the leading system messages as
 * `instructions`, tool calls and results as `function_call` / `function_call_output` items, image and file parts
 * as `input_image` / `input_file`, and the reasoning items of earlier replies (kept on the reply as
 * `reasoningParts`, with their encrypted content) before the calls they led to. Params map as `maxNewTokens ->
 * max_output_tokens`, `temperature`, `topP -> top_p` (not for reasoning models), `reasoning.effort ->
 * reasoning.effort`, `responseFormat -> text.format` (strict `json_schema`). The API has no stop sequences:
 * `stopWords` are cut on this side.
 *
 * @example
 * const llm = new AsyncOpenAIResponsesAPI({ model: 'gpt-5-mini', reasoning: { effort: 'low' } });
 * const reply = await llm.generate([{ role: 'user', content: 'What is 12 * 7?' }], { tools: [calculator] });
 * reply.reasoningParts; // [{ type: 'openai.reasoning', id: 'rs_...', summary: [...], encryptedContent: '...' }]
 */
export class AsyncOpenAIResponsesAPI extends OpenAICompatibleLLM {
  /** Whether responses are stored by OpenAI. */
  readonly store: boolean;
  readonly #parser: APITemplateParser;
  readonly #reasoningModel: boolean;
  readonly #summary: 'auto' | 'concise' | 'detailed' | null;

  constructor(options: OpenAIResponsesAPIOptions = {}) {
    const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
    const apiKey = options.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
    super(
      { ...options, apiKey },
      {
        model: 'gpt-5-mini',
        baseURL: baseURL ?? 'https://api.openai.com/v1',
        ...(baseURL !== undefined ? { apiKey: 'EMPTY' } : {}),
      },
    );
    this.store = options.store ?? false;
    this.#parser = new APITemplateParser(options.metaTemplate ?? DEFAULT_API_META_TEMPLATE);
    this.#reasoningModel = REASONING_MODEL.test(this.model);
    this.#summary = options.reasoningSummary === undefined ? 'auto' : options.reasoningSummary;
  }

  protected buildRequest(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: OpenAICallParams,
    inputs: RequestInputs,
  ): CompletionRequest {
    const { instructions, input } = toResponsesInput(this.#parser.parse(messages), inputs);
    const body: Record<string, unknown> = {
      model: this.model,
      input,
      max_output_tokens: params.maxNewTokens,
    };
    if (instructions !== undefined) body.instructions = instructions;
    if (!this.#reasoningModel) {
      body.temperature = params.temperature;
      body.top_p = params.topP;
    }
    const effort = params.reasoning?.effort;
    if (this.#reasoningModel || params.reasoning !== undefined) {
      const reasoning: Record<string, unknown> = {};
      if (effort !== undefined) reasoning.effort = effort;
      if (this.#summary !== null) reasoning.summary = this.#summary;
      body.reasoning = reasoning;
      // Without stored responses, a reasoning item goes back with its encrypted content.
      if (!this.store) body.include = ['reasoning.encrypted_content'];
    }
    body.store = this.store;
    const format = call.responseFormat;
    if (format !== undefined) body.text = { format: responsesTextFormat(format) };
    else if (call.jsonMode) body.text = { format: { type: 'json_object' } };
    Object.assign(body, this.extraBody, call.extraBody);
    return { endpoint: 'responses', body };
  }
}
