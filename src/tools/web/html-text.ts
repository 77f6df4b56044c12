import { type ExtractLimits, ExtractorPool, type PageText } from './extract/pool';
import { roughText } from './extract/rough-text';

export type { PageText } from './extract/pool';

/** Characters of HTML extracted; the rest of a longer document is left out. */
export const MAX_EXTRACT_CHARS = 2 * 1024 * 1024;

/** Characters of HTML the fallback text is made from when the extraction fails. */
const MAX_ROUGH_CHARS = 1024 * 1024;

/** Tags nested deeper than this are dropped (their text kept) before the document is parsed. */
export const MAX_PARSE_DEPTH = 256;

/** Elements deeper than this are flattened to their text before Readability sees the tree. */
export const MAX_EXTRACT_DEPTH = 64;

/** Readability runs only on documents with at most this many elements; larger ones get the plain extraction. */
export const MAX_READABILITY_ELEMENTS = 20_000;

/** The default time limit of one page's extraction, in milliseconds. */
export const DEFAULT_EXTRACT_TIMEOUT_MS = 5000;

const LIMITS: ExtractLimits = {
  maxParseDepth: MAX_PARSE_DEPTH,
  maxDepth: MAX_EXTRACT_DEPTH,
  maxReadabilityElements: MAX_READABILITY_ELEMENTS,
};

let shared: ExtractorPool | undefined;

/** The extraction threads every web tool shares (created on first use). */
export function sharedExtractorPool(): ExtractorPool {
  shared ??= new ExtractorPool();
  return shared;
}

/** One space between words, no blank lines (Lagent collapses runs of newlines too). */
export function tidy(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/** Options of {@link htmlToText}. */
export interface HtmlToTextOptions {
  /** Milliseconds the extraction may run; then it is stopped and the rough text is returned. @default 5000 */
  timeoutMs?: number | undefined;
  /** Aborting it stops the extraction; the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The threads to extract in. @default the shared pool */
  pool?: ExtractorPool | undefined;
}

/**
 * The main text of an HTML page: Readability's article when it finds one, otherwise the body without scripts,
 * styles, navigation, headers, footers and forms. Text keeps one line per block.
 *
 * The work runs in a worker thread (see {@link ExtractorPool}) on a bounded input: at most
 * {@link MAX_EXTRACT_CHARS} characters, whitespace runs collapsed, elements deeper than {@link MAX_EXTRACT_DEPTH}
 * flattened, and Readability skipped past {@link MAX_READABILITY_ELEMENTS} elements. When the extraction
 * runs out of time (`timeoutMs`) or memory, its thread is stopped and the page's rough text (a linear scan,
 * tags dropped) comes back, after a note saying so.
 *
 * @throws ConfigurationError when `@mozilla/readability` or `linkedom` is not installed.
 */
export async function htmlToText(html: string, options: HtmlToTextOptions = {}): Promise<PageText> {
  const source = html.length > MAX_EXTRACT_CHARS ? html.slice(0, MAX_EXTRACT_CHARS) : html;
  const timeoutMs = options.timeoutMs ?? DEFAULT_EXTRACT_TIMEOUT_MS;
  const pool = options.pool ?? sharedExtractorPool();
  const outcome = await pool.extract({ html: source, limits: LIMITS, timeoutMs, signal: options.signal });
  if (outcome.ok) return outcome.page;
  const why =
    outcome.reason === 'timeout' ? `within ${timeoutMs} ms` : `(${outcome.message.split('\n', 1)[0]})`;
  const rough = roughText(source.slice(0, MAX_ROUGH_CHARS));
  const note = `[The main text of this page could not be extracted ${why}; this is all of its text, roughly.]`;
  return { title: rough.title, text: rough.text === '' ? note : `${note}\n${rough.text}` };
}
