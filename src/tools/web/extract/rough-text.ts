import { decodeEntities } from '../searchers/base';

/** Elements whose content is not text a reader sees. */
const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'textarea',
  'title',
  'xmp',
  'iframe',
  'svg',
  'math',
]);

/** Elements that start a line. */
const LINE_BREAKING = new Set([
  'address',
  'article',
  'blockquote',
  'br',
  'caption',
  'dd',
  'div',
  'dl',
  'dt',
  'figcaption',
  'figure',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'li',
  'main',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'td',
  'th',
  'tr',
  'ul',
]);

/** The end of a tag: its '>', or the '<' of the next one when it has none. */
const TAG_END = /[<>]/g;

function isLetter(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
}

/** One space between words, no blank lines; the same as `tidy` in `html-text.ts`. */
function tidyLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/**
 * The text of an HTML document by one linear scan, without building a tree: tags are dropped (a line break for
 * block elements), comments and the content of scripts, styles and the like are skipped, entities decoded.
 * Rough, but its cost is proportional to the length of `html` whatever the document's shape: the fallback when
 * the real extraction ran out of time or memory.
 *
 * @example
 * roughText('<title>T</title><p>a <b>b</b></p><script>x()</script><p>c</p>'); // { title: 'T', text: 'a b\nc' }
 */
export function roughText(html: string): { title: string; text: string } {
  let lower: string | undefined;
  const parts: string[] = [];
  let title = '';
  let textStart = 0;
  let index = 0;
  for (;;) {
    const open = html.indexOf('<', index);
    if (open === -1) break;
    const next = html.charCodeAt(open + 1);
    const closing = next === 47; // '/'
    if (!isLetter(next) && !(closing && isLetter(html.charCodeAt(open + 2)))) {
      if (next !== 33 && next !== 63) {
        index = open + 1; // a '<' that starts nothing is text
        continue;
      }
      // A comment, or a '<!' / '<?' declaration: skipped.
      if (open > textStart) parts.push(html.slice(textStart, open));
      const comment = html.startsWith('<!--', open);
      const close = html.indexOf(comment ? '-->' : '>', open + 2);
      index = textStart = close === -1 ? html.length : close + (comment ? 3 : 1);
      continue;
    }
    if (open > textStart) parts.push(html.slice(textStart, open));
    let nameEnd = open + (closing ? 2 : 1);
    while (nameEnd < html.length && nameEnd - open < 12 && isLetter(html.charCodeAt(nameEnd))) nameEnd++;
    const digit = html.charCodeAt(nameEnd);
    if (digit >= 49 && digit <= 54) nameEnd++; // h1 to h6
    const name = html.slice(open + (closing ? 2 : 1), nameEnd).toLowerCase();
    TAG_END.lastIndex = nameEnd;
    const end = TAG_END.exec(html);
    index = textStart = end === null ? html.length : end[0] === '>' ? end.index + 1 : end.index;
    if (!closing && SKIPPED.has(name)) {
      lower ??= html.toLowerCase();
      const close = lower.indexOf(`</${name}`, index);
      const stop = close === -1 ? html.length : close;
      if (name === 'title' && title === '') title = html.slice(index, stop);
      index = textStart = stop;
      continue;
    }
    if (LINE_BREAKING.has(name)) parts.push('\n');
  }
  parts.push(html.slice(textStart));
  return { title: tidyLines(decodeEntities(title)), text: tidyLines(decodeEntities(parts.join(''))) };
}
