/**
 * Escape sequences and control characters, as a terminal would read them: CSI (`ESC [ ... final`, also
 * 8-bit), the string sequences OSC, DCS, SOS, PM and APC up to their terminator (BEL or ST) or, unterminated,
 * to the end of the text, other `ESC` sequences, and the remaining C0 and C1 controls but `\n` and `\t`. A
 * sequence cut off at the end of the text matches as far as it goes, so a streamed reply cleaned chunk by
 * chunk (the whole text so far each time) only ever grows.
 */
const CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it matches
  /\x1b\[[0-?]*[ -/]*(?:[@-~]|$)|\x9b[0-?]*[ -/]*(?:[@-~]|$)|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[\s\S]*?(?:\x07|\x1b\\|\x9c|$)|\x1b[ -/]*[0-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * `text` without what would drive the terminal instead of being shown (a model's reply can carry an OSC that
 * renames the window or writes the clipboard, a cursor move or `\r` that overwrites what was printed): escape
 * sequences and control characters are removed, newlines and tabs kept.
 */
export function terminalText(text: string): string {
  return text.replace(CONTROL, '');
}

/**
 * Where the escape sequence (or control character) that `text` ends with starts, when the text that follows
 * could still make it longer; else `text.length`. Text cut there cleans, piece by piece, as the whole would:
 * every sequence before the cut ends where it ends in any longer text.
 */
export function unfinishedAt(text: string): number {
  let last: RegExpExecArray | null = null;
  CONTROL.lastIndex = 0;
  for (let found = CONTROL.exec(text); found !== null; found = CONTROL.exec(text)) last = found;
  return last !== null && last.index + last[0].length === text.length ? last.index : text.length;
}
