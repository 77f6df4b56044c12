import { ToolParser, type ToolParserOptions } from './tool-parser';

/** Options of {@link PluginParser}: those of `ToolParser`, all optional. */
export type PluginParserOptions<A = unknown> = Partial<ToolParserOptions<A>>;

/**
 * Lagent's default plugin-call check: the trimmed text must be one JSON object (`{"name": ..., "parameters": ...}`).
 * Throws otherwise, which the parser reports as `PARSING_ERROR`.
 */
export function validatePluginCall(text: string): unknown {
  const trimmed = text.trim();
  if (!(trimmed.startsWith('{') && trimmed.endsWith('}'))) {
    throw new SyntaxError('a plugin call must be one JSON object');
  }
  return JSON.parse(trimmed);
}

/**
 * InternLM's plugin call format: `<|action_start|><|plugin|>\n` a JSON object `<|action_end|>\n`, reported as
 * tool type `'plugin'`; the JSON is parsed (invalid JSON gives `PARSING_ERROR` with the raw text kept), so
 * the action is `unknown` unless a `validate` of your own says more.
 *
 * @example
 * new PluginParser().parseResponse('<|action_start|><|plugin|>\n{"name": "search", "parameters": {"q": "x"}}<|action_end|>\n').action;
 * // { name: 'search', parameters: { q: 'x' } }
 */
export class PluginParser<A = unknown> extends ToolParser<A> {
  constructor(options: PluginParserOptions<A> = {}) {
    super({
      ...options,
      toolType: options.toolType ?? 'plugin',
      begin: options.begin ?? '<|action_start|><|plugin|>\n',
      end: options.end ?? '<|action_end|>\n',
      // Without a validate of the caller's, A is its default, unknown: what validatePluginCall returns.
      validate: options.validate ?? (validatePluginCall as (action: string) => A),
    });
  }
}
