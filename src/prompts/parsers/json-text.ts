/**
 * Lenient JSON reading for model output: the first fenced block (``` or ```json, possibly cut off by a
 * stop word) is taken when there is one, `//` comments and trailing commas are removed outside strings.
 */
export function extractJSONText(text: string): string {
  const fence = text.indexOf('```');
  if (fence === -1) return text;
  const lineEnd = text.indexOf('\n', fence);
  if (lineEnd === -1) return text.slice(fence + 3).replace(/^[\w-]*/, '');
  const close = text.indexOf('```', lineEnd);
  return close === -1 ? text.slice(lineEnd + 1) : text.slice(lineEnd + 1, close);
}

/** Removes `//` comments and trailing commas outside JSON strings. */
export function stripJSONComments(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (inString) {
      out += char;
      if (char === '\\') {
        out += text[i + 1] ?? '';
        i++;
      } else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      out += char;
    } else if (char === '/' && text[i + 1] === '/') {
      const newline = text.indexOf('\n', i);
      if (newline === -1) break;
      i = newline - 1;
    } else if (char === ',') {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j]!)) j++;
      // A comment may sit between the comma and the closing bracket.
      if (text[j] === '/' && text[j + 1] === '/') {
        const newline = text.indexOf('\n', j);
        j = newline === -1 ? text.length : newline;
        while (j < text.length && /\s/.test(text[j]!)) j++;
      }
      if (text[j] !== '}' && text[j] !== ']') out += char;
    } else out += char;
  }
  return out;
}

/**
 * Parses model output as JSON leniently (see {@link extractJSONText}); when the whole text is not JSON, the
 * span from the first `{` or `[` to the last `}` or `]` is tried. Throws the `SyntaxError` of the first attempt.
 */
export function parseLenientJSON(text: string): unknown {
  const cleaned = stripJSONComments(extractJSONText(text)).trim();
  try {
    return JSON.parse(cleaned);
  } catch (error) {
    const first = cleaned.search(/[{[]/);
    const last = Math.max(cleaned.lastIndexOf('}'), cleaned.lastIndexOf(']'));
    if (first > 0 || (first === 0 && last < cleaned.length - 1)) {
      if (last > first) {
        try {
          return JSON.parse(cleaned.slice(first, last + 1));
        } catch {
          // fall through to the first error, which describes the text as given
        }
      }
    }
    throw error;
  }
}
