/**
 * What a terminal or a log viewer would act on instead of showing: C0 controls (newlines and tabs included), DEL,
 * C1 controls (`\x9b` starts a sequence like `ESC [`), the line and paragraph separators and the bidirectional
 * formatting characters (which reorder what is shown), and the backslash, so that an escape in the output is
 * always one written here.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it matches
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\\]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

function escapeOf(character: string): string {
  const named = NAMED[character];
  if (named !== undefined) return named;
  const code = character.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` as one line a terminal shows as it is: every character it would act on is written as an escape
 * (`\x1b`, `\n`, `\u202e`, `\\`). For log lines of servers and the command line that carry what a client sent
 * (a session id, a key name, an error message quoting them), so a client cannot move the cursor, rewrite
 * the window title or forge log lines.
 *
 * @example
 * printable('a\x1b[2Jb\nc'); // 'a\\x1b[2Jb\\nc'
 */
export function printable(text: string): string {
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, escapeOf) : text;
}
