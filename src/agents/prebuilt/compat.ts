import { ConfigurationError } from '../../schema/errors';
import { pythonJSON } from '../../utils/text';
import type { PromptLanguage } from './internlm-prompts';

/**
 * A prebuilt agent's compatibility mode. `'lagent'` makes its defaults Python Lagent's, character for
 * character: Lagent's prompt texts (`LAGENT_META_CN`, ...) and, for `ReAct`, Lagent's rendering of the tool
 * list and of the reply formats. Options you pass still win.
 */
export type CompatMode = 'lagent';

/**
 * Checks a prebuilt agent's `compat` option: an unknown mode, or a `language` other than the one Lagent's
 * prompts are written in, is a `ConfigurationError` (Lagent has its prompts in one language only).
 */
export function checkCompat(
  owner: string,
  compat: unknown,
  language: PromptLanguage | undefined,
  lagentLanguage: PromptLanguage,
): compat is CompatMode {
  if (compat === undefined) return false;
  if (compat !== 'lagent') {
    throw new ConfigurationError({
      message: `${owner}: compat must be 'lagent' or left out, got ${JSON.stringify(compat) ?? String(compat)}`,
    });
  }
  if (language !== undefined && language !== lagentLanguage) {
    throw new ConfigurationError({
      message: `${owner}: compat: 'lagent' uses Lagent's prompts, which are in '${lagentLanguage}'; drop language: '${language}' or compat`,
    });
  }
  return true;
}

/**
 * `value` as Python's `json.dumps(value)` writes it with its default `ensure_ascii=True`: `", "` and `": "`
 * between items, and every character outside printable ASCII as a `\uXXXX` escape (lowercase hex, astral
 * characters as their surrogate pair), as Lagent's ReAct writes its tool list.
 *
 * @example
 * asciiPythonJSON({ q: '天气' }); // '{"q": "\\u5929\\u6c14"}'
 */
export function asciiPythonJSON(value: unknown): string {
  return pythonJSON(value).replace(
    /[^ -~]/g, // outside printable ASCII (pythonJSON has escaped the other control characters already)
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
