/*
 * The page extraction worker: the CommonJS source of a `worker_threads` worker, read by `pool.ts` and started
 * with `eval: true`, so it runs the same from the TypeScript sources, the ESM build and the CJS build. The
 * thread that starts it resolves `linkedom` and `@mozilla/readability` (the optional peers) from lagent-ts's own
 * location and passes their absolute paths in `workerData`.
 *
 * Protocol: the worker posts `{ type: 'ready' }` once the libraries are loaded, or `{ type: 'load-error', message }`
 * and ends. Each message `{ id, html, limits }` is answered with `{ id, page: { title, text } }`. Every step is
 * bounded before Readability runs, whose cost grows with the depth of the tree and the number of elements:
 *
 * 1. runs of whitespace (no-break space entities included) become one character (a newline when the run has one);
 * 2. start and end tags nested deeper than `limits.maxParseDepth` are dropped by a linear scan (linkedom's parse
 *    slows down with depth: 20,000 nested elements take 0.3 s, 100,000 take 6 s);
 * 3. the document is parsed (linkedom); a fragment is parsed again inside `<html><body>`;
 * 4. every element at depth `limits.maxDepth` that has element children is replaced by its text (one line per
 *    block), so the tree is never deeper than that;
 * 5. Readability runs only when the document has at most `limits.maxReadabilityElements` elements; otherwise, or
 *    when it finds no article of 200 characters, the text is the body's without scripts, navigation, headers,
 *    footers and forms.
 *
 * Tree walks are loops, never recursion, so no document can overflow the stack. `tidy` here is the same as
 * `tidy` in `html-text.ts`.
 */
'use strict';
const { parentPort, workerData } = require('node:worker_threads');

const NOISE =
  'script, style, noscript, template, svg, canvas, iframe, object, embed, nav, header, footer, aside, form, button, select, input, textarea, [hidden], [aria-hidden="true"], [role="navigation"], [role="banner"], [role="contentinfo"]';
const BLOCKS = new Set([
  'ADDRESS',
  'ARTICLE',
  'BLOCKQUOTE',
  'BR',
  'CAPTION',
  'DD',
  'DIV',
  'DL',
  'DT',
  'FIGCAPTION',
  'FIGURE',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HR',
  'LI',
  'MAIN',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'TD',
  'TH',
  'TR',
  'UL',
]);

function tidy(text) {
  return text
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/** The text under root, a line break around each block element; a loop over an explicit stack. */
function blockText(root) {
  const parts = [];
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') {
      parts.push(node);
      continue;
    }
    if (node.nodeType === 3) {
      parts.push(node.textContent || '');
      continue;
    }
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) continue;
    const block = BLOCKS.has(String(node.nodeName).toUpperCase());
    if (block) {
      parts.push('\n');
      stack.push('\n');
    }
    const children = node.childNodes;
    for (let index = children.length - 1; index >= 0; index--) stack.push(children[index]);
  }
  return tidy(parts.join(''));
}

/** Replaces the content of every element at maxDepth that has element children by its text; counts elements. */
function flatten(root, maxDepth) {
  let count = 0;
  let node = root;
  let depth = 0;
  while (node) {
    count++;
    const child = node.firstElementChild;
    if (child) {
      if (depth < maxDepth) {
        node = child;
        depth++;
        continue;
      }
      node.textContent = blockText(node);
    }
    while (node !== root && !node.nextElementSibling) {
      node = node.parentElement;
      depth--;
    }
    if (node === root) break;
    node = node.nextElementSibling;
  }
  return count;
}

const VOID = new Set([
  'area',
  'base',
  'basefont',
  'br',
  'col',
  'command',
  'embed',
  'frame',
  'hr',
  'image',
  'img',
  'input',
  'isindex',
  'keygen',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
const RAW_TEXT = new Set(['script', 'style', 'title', 'textarea']);
const P = new Set(['p']);
const FORM = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const DDT = new Set(['dd', 'dt']);
const SECTIONS = new Set(['thead', 'tbody']);
/** Start tags that close open elements (htmlparser2's rules, which linkedom parses with). */
const IMPLIES_CLOSE = new Map([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DDT],
  ['dt', DDT],
  ['rt', new Set(['rt', 'rp'])],
  ['rp', new Set(['rt', 'rp'])],
  ['tbody', SECTIONS],
  ['tfoot', SECTIONS],
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((name) => [name, FORM]),
  ...[
    'p',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'address',
    'article',
    'aside',
    'blockquote',
    'details',
    'div',
    'dl',
    'fieldset',
    'figcaption',
    'figure',
    'footer',
    'form',
    'header',
    'hr',
    'main',
    'nav',
    'ol',
    'pre',
    'section',
    'table',
    'ul',
  ].map((name) => [name, P]),
]);
/** How far down the open elements an end tag looks for its start tag. */
const END_TAG_SEARCH = 64;

function isLetter(code) {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
}
function isSpace(code) {
  return code === 32 || code === 9 || code === 10 || code === 12 || code === 13;
}

/** Where the tag whose attributes start at pos ends (after its '>'), and whether it ends with '/>'. */
function tagEnd(html, pos) {
  const length = html.length;
  while (pos < length) {
    const code = html.charCodeAt(pos);
    if (code === 62) return { end: pos + 1, selfClosing: html.charCodeAt(pos - 1) === 47 };
    pos++;
    if (code !== 61) continue;
    while (pos < length && isSpace(html.charCodeAt(pos))) pos++;
    const quote = html.charCodeAt(pos);
    if (quote === 34 || quote === 39) {
      const close = html.indexOf(quote === 34 ? '"' : "'", pos + 1);
      if (close === -1) return { end: length, selfClosing: false };
      pos = close + 1;
    }
  }
  return { end: length, selfClosing: false };
}

/**
 * The document without the start and end tags of elements nested deeper than maxDepth (their text stays), by
 * one linear scan that follows the tokenizer and the implied end tags of htmlparser2 closely enough to bound
 * the depth of the tree linkedom builds; its cost grows with that depth.
 */
function limitNesting(html, maxDepth) {
  const stack = [];
  const parts = [];
  let foreign = 0;
  let keptFrom = 0;
  let index = 0;
  let lower;
  const drop = (from, to) => {
    if (from > keptFrom) parts.push(html.slice(keptFrom, from));
    keptFrom = to;
  };
  const pop = () => {
    const name = stack.pop();
    if (name === 'svg' || name === 'math') foreign--;
  };
  for (;;) {
    const open = html.indexOf('<', index);
    if (open === -1) break;
    const next = html.charCodeAt(open + 1);
    if (next === 33 || next === 63) {
      const comment = html.startsWith('<!--', open);
      const close = html.indexOf(comment ? '-->' : '>', open + 2);
      index = close === -1 ? html.length : close + (comment ? 3 : 1);
      continue;
    }
    const closing = next === 47;
    const nameStart = open + (closing ? 2 : 1);
    if (!isLetter(html.charCodeAt(nameStart))) {
      if (closing) {
        const close = html.indexOf('>', open);
        index = close === -1 ? html.length : close + 1;
      } else {
        index = open + 1;
      }
      continue;
    }
    let nameEnd = nameStart + 1;
    for (;;) {
      const code = html.charCodeAt(nameEnd);
      if (Number.isNaN(code) || code === 47 || code === 62 || isSpace(code)) break;
      nameEnd++;
    }
    const name = html.slice(nameStart, nameEnd).toLowerCase();
    const { end, selfClosing } = tagEnd(html, nameEnd);
    index = end;
    if (closing) {
      const bottom = Math.max(0, stack.length - END_TAG_SEARCH);
      let found = -1;
      for (let at = stack.length - 1; at >= bottom; at--) {
        if (stack[at] === name) {
          found = at;
          break;
        }
      }
      if (found === -1) continue;
      while (stack.length > found) pop();
      if (found >= maxDepth) drop(open, end);
      continue;
    }
    const implied = IMPLIES_CLOSE.get(name);
    if (implied) while (stack.length > 0 && implied.has(stack[stack.length - 1])) pop();
    if (VOID.has(name) || (selfClosing && foreign > 0)) continue;
    if (RAW_TEXT.has(name)) {
      lower ??= html.toLowerCase();
      const close = lower.indexOf(`</${name}`, end);
      if (stack.length >= maxDepth) {
        const after = close === -1 ? html.length : tagEnd(html, close + 2 + name.length).end;
        drop(open, after);
        index = after;
        continue;
      }
      index = close === -1 ? html.length : close;
    }
    stack.push(name);
    if (name === 'svg' || name === 'math') foreign++;
    if (stack.length > maxDepth) drop(open, end);
  }
  if (keptFrom === 0) return html;
  parts.push(html.slice(keptFrom));
  return parts.join('');
}

function parse(html, maxDepth) {
  let { document } = libraries.parseHTML(html);
  const top = document.documentElement;
  if (!top || String(top.nodeName).toUpperCase() !== 'HTML') {
    document = libraries.parseHTML(`<!doctype html><html><body>${html}</body></html>`).document;
  }
  const elements = flatten(document.documentElement, maxDepth);
  return { document, elements };
}

/** Two or more whitespace characters or no-break space entities. */
const WHITESPACE_RUN = /(?:\s|&nbsp;|&#160;|&#x0*a0;){2,}/gi;

function extract(source, limits) {
  const collapsed = source.replace(WHITESPACE_RUN, (run) => (run.includes('\n') ? '\n' : ' '));
  const html = limitNesting(collapsed, limits.maxParseDepth);
  let { document, elements } = parse(html, limits.maxDepth);
  const title = tidy(document.title || '');
  if (elements <= limits.maxReadabilityElements) {
    let article = null;
    try {
      article = new libraries.Readability(document, { charThreshold: 200 }).parse();
    } catch {
      // Readability gives up on some documents; the plain extraction below still works.
    }
    if (article?.content) {
      const text = blockText(parse(article.content, limits.maxDepth).document.body);
      if (text.length >= 200) return { title: tidy(article.title || '') || title, text };
    }
    // Readability changes the document it reads: start again from the source.
    document = parse(html, limits.maxDepth).document;
  }
  const noise = document.querySelectorAll(NOISE);
  for (let index = noise.length - 1; index >= 0; index--) noise[index].remove();
  return { title, text: blockText(document.body || document.documentElement) };
}

let libraries;
try {
  libraries = {
    parseHTML: require(workerData.linkedom).parseHTML,
    Readability: require(workerData.readability).Readability,
  };
} catch (error) {
  parentPort.postMessage({ type: 'load-error', message: String(error?.message || error) });
}
if (libraries) {
  parentPort.on('message', ({ id, html, limits }) => {
    let page;
    try {
      page = extract(html, limits);
    } catch (error) {
      parentPort.postMessage({ id, error: String(error?.stack || error) });
      return;
    }
    parentPort.postMessage({ id, page });
  });
  parentPort.postMessage({ type: 'ready' });
}
