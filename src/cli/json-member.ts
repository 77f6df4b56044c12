/**
 * The JSON text of a top-level member of a JSON object, as written: `1e400` or `12345678901234567890` stay
 * what they say, where `JSON.parse` would give `Infinity` or a rounded number. The text must be valid JSON
 * (parse it first); when the member appears more than once, the last one counts, as with `JSON.parse`.
 * Undefined when the text is not an object or has no such member.
 */
export function rawMember(text: string, name: string): string | undefined {
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return undefined;
  let found: string | undefined;
  i = skipSpace(text, i + 1);
  while (text[i] === '"') {
    const keyEnd = endOfString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, skipSpace(text, keyEnd) + 1); // past the colon
    const valueEnd = endOfValue(text, i);
    if (key === name) found = text.slice(i, valueEnd);
    i = skipSpace(text, valueEnd);
    if (text[i] !== ',') break;
    i = skipSpace(text, i + 1);
  }
  return found;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
    i++;
  return i;
}

/** The index after the string starting at `i` (at its opening quote). */
function endOfString(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j + 1;
}

/** The index after the value starting at `i`; nested objects and arrays are skipped without recursion. */
function endOfValue(text: string, i: number): number {
  const first = text[i];
  if (first === '"') return endOfString(text, i);
  if (first === '{' || first === '[') {
    let depth = 0;
    let j = i;
    while (j < text.length) {
      const char = text[j];
      if (char === '"') {
        j = endOfString(text, j);
        continue;
      }
      if (char === '{' || char === '[') depth++;
      else if (char === '}' || char === ']') {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
    return j;
  }
  let j = i;
  while (j < text.length && !',}] \t\n\r'.includes(text[j]!)) j++;
  return j;
}
