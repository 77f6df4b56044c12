import { createRequire } from 'node:module';
import type { ChatMessage } from '../schema/chat-message';
import type { ContentPart } from '../schema/content-parts';

/** What `countTokens` takes: a text, or chat messages (tool calls and tool results included). */
export type TokenCountInput = string | readonly ChatMessage[];

/** The BPE encodings counted exactly (with `gpt-tokenizer` installed). */
export type TokenEncoding = 'o200k_base' | 'cl100k_base';

/**
 * Per-message framing, as OpenAI's cookbook counts it for chat models: each message costs 3 tokens besides
 * its text, a `name` 1 more, and every reply is primed with 3.
 */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const TOKENS_REPLY_PRIMING = 3;

/**
 * The encoding of an OpenAI model, from its name: `o200k_base` for gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the
 * o-series and chatgpt-4o; `cl100k_base` for gpt-4 and gpt-3.5; `undefined` for any other model (Claude,
 * InternLM, a local model...), which is then estimated. A provider prefix (`openai/gpt-4o`) is ignored.
 */
export function encodingForModel(model: string | undefined): TokenEncoding | undefined {
  if (typeof model !== 'string') return undefined;
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o[1-9](-|$)|gpt-oss)/.test(name)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|text-embedding-3|text-embedding-ada)/.test(name)) return 'cl100k_base';
  return undefined;
}

/** One encoding's `countTokens`, or `null` when `gpt-tokenizer` cannot be loaded. */
type TextCounter = (text: string) => number;
const counters = new Map<TokenEncoding, TextCounter | null>();

/** This module's file: `import.meta.url` in ESM (sources and the ESM build), `__filename` in the CJS build. */
function currentFile(): string {
  const url: unknown = import.meta.url;
  return typeof url === 'string' && url.startsWith('file:') ? url : __filename;
}

/**
 * The exact counter of an encoding: `gpt-tokenizer`, loaded synchronously on first use (an optional peer:
 * without it every count is an estimate). Loaded once per encoding; a failed load is not retried.
 */
function exactCounter(encoding: TokenEncoding): TextCounter | null {
  let counter = counters.get(encoding);
  if (counter !== undefined) return counter;
  try {
    const module = createRequire(currentFile())(`gpt-tokenizer/encoding/${encoding}`) as {
      countTokens(text: string): number;
    };
    counter = (text) => (text === '' ? 0 : module.countTokens(text));
  } catch {
    counter = null;
  }
  counters.set(encoding, counter);
  return counter;
}

/**
 * The estimate used when the encoding is unknown or `gpt-tokenizer` is not installed: one token per 4 bytes
 * of UTF-8, rounded up (close for English and code on today's BPE vocabularies, on the high side for CJK).
 */
export function estimateTextTokens(text: string): number {
  return text === '' ? 0 : Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

/** Options of {@link countTokens}. */
export interface CountTokensOptions {
  /** The model whose encoding to use (see {@link encodingForModel}). */
  model?: string | undefined;
  /** The encoding, overriding the model's. */
  encoding?: TokenEncoding | undefined;
}

/**
 * The text counter for a model: exact with its encoding when known and `gpt-tokenizer` is installed,
 * {@link estimateTextTokens} otherwise. `exact` says which.
 */
export function textCounterFor(options: CountTokensOptions = {}): { count: TextCounter; exact: boolean } {
  const encoding = options.encoding ?? encodingForModel(options.model);
  const exact = encoding === undefined ? null : exactCounter(encoding);
  return exact ? { count: exact, exact: true } : { count: estimateTextTokens, exact: false };
}

/**
 * The text a message is counted by besides its framing: its content, each tool call as the JSON OpenAI
 * sends (`{"id","type":"function","function":{"name","arguments"}}`, arguments as a JSON string), and a
 * tool result's `toolCallId`. Images are not counted.
 */
export function messageText(message: ChatMessage): string {
  let text = typeof message.content === 'string' ? message.content : '';
  const calls = message.toolCalls;
  if (calls !== undefined && calls.length > 0) {
    for (const call of calls) {
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
      text += JSON.stringify({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: args },
      });
    }
  }
  if (message.toolCallId !== undefined) text += message.toolCallId;
  return text;
}

/**
 * The tokens an image part is estimated at: what Anthropic bills an image scaled to its 1.15 megapixel limit
 * (`width * height / 750`), above OpenAI's 765 for a 1024x1024 high-detail image.
 */
export const IMAGE_TOKENS = 1600;

/** The tokens a PDF page is estimated at (Anthropic: 1,500 to 3,000 a page, its text and its image). */
export const PDF_PAGE_TOKENS = 2000;

/** The bytes of an inline part source (bytes or a base64 `data:` URL); undefined for a URL or a path. */
function inlineBytes(source: unknown): Buffer | undefined {
  if (source instanceof Uint8Array) return Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source !== 'string' || !source.startsWith('data:')) return undefined;
  const comma = source.indexOf(',');
  return comma === -1 ? undefined : Buffer.from(source.slice(comma + 1), 'base64');
}

/**
 * The estimated tokens of a message's image and file parts: {@link IMAGE_TOKENS} an image; for a PDF,
 * {@link PDF_PAGE_TOKENS} a page (its pages counted when its bytes are at hand, else one); a text file its text;
 * any other file a token per 4 bytes.
 */
export function partTokens(parts: readonly ContentPart[], count: TextCounter): number {
  let tokens = 0;
  for (const part of parts) {
    if (part.type === 'image') tokens += IMAGE_TOKENS;
    else if (part.type === 'file') {
      const bytes = inlineBytes(part.data);
      if (part.mediaType === 'application/pdf') {
        const pages =
          bytes === undefined ? 1 : (bytes.toString('latin1').match(/\/Type\s*\/Page(?!s)/g)?.length ?? 1);
        tokens += Math.max(1, pages) * PDF_PAGE_TOKENS;
      } else if (bytes === undefined) tokens += PDF_PAGE_TOKENS;
      else if (part.mediaType.startsWith('text/')) tokens += count(bytes.toString('utf8'));
      else tokens += Math.ceil(bytes.length / 4);
    }
  }
  return tokens;
}

/**
 * One message's tokens: its framing ({@link TOKENS_PER_MESSAGE}, the role and name), its text, and the
 * estimate of its image and file parts ({@link partTokens}).
 */
export function countMessageTokens(message: ChatMessage, count: TextCounter): number {
  let tokens = TOKENS_PER_MESSAGE + count(message.role) + count(messageText(message));
  if (message.name !== undefined && message.name !== '') tokens += TOKENS_PER_NAME + count(message.name);
  if (message.parts !== undefined) tokens += partTokens(message.parts, count);
  return tokens;
}

/**
 * Counts the tokens of a text, or of chat messages as a prompt: each message's framing and text
 * ({@link countMessageTokens}), plus {@link TOKENS_REPLY_PRIMING} for the reply. Exact (OpenAI's
 * encoding, through `gpt-tokenizer`) for OpenAI models; for any other model, or without `gpt-tokenizer`
 * installed, an estimate: `ceil(UTF-8 bytes / 4)` per text, with the same per-message framing.
 *
 * @example
 * countTokens('hello world', { model: 'gpt-4o' }); // 2
 * countTokens([{ role: 'user', content: 'hi' }], { model: 'claude-sonnet-4' }); // estimated
 */
export function countTokens(input: TokenCountInput, options: CountTokensOptions = {}): number {
  const { count } = textCounterFor(options);
  if (typeof input === 'string') return count(input);
  let tokens = TOKENS_REPLY_PRIMING;
  for (const message of input) tokens += countMessageTokens(message, count);
  return tokens;
}
