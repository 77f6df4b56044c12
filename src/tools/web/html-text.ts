import { missingPeer } from '../../schema/errors';

/** The readable text of a page. */
export interface PageText {
  title: string;
  text: string;
}

/** The few DOM members used here (the project's TypeScript setup has no DOM library). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}
interface DomElement extends DomNode {
  remove(): void;
}
interface DomDocument extends DomNode {
  title: string;
  body: DomNode | null;
  documentElement: DomNode | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}
interface HtmlLibraries {
  parseHTML(html: string): { document: DomDocument };
  Readability: new (
    document: DomDocument,
    options?: { charThreshold?: number },
  ) => { parse(): { title?: string | null; content?: string | null } | null };
}

let libraries: Promise<HtmlLibraries> | undefined;

/**
 * `@mozilla/readability` and `linkedom`, optional peers loaded on first use. A missing one is a
 * `ConfigurationError` saying what to install.
 */
function loadLibraries(): Promise<HtmlLibraries> {
  libraries ??= (async () => {
    try {
      const [readability, linkedom] = await Promise.all([import('@mozilla/readability'), import('linkedom')]);
      return {
        Readability: readability.Readability as unknown as HtmlLibraries['Readability'],
        parseHTML: linkedom.parseHTML as unknown as HtmlLibraries['parseHTML'],
      };
    } catch (error) {
      libraries = undefined;
      throw missingPeer(
        ['@mozilla/readability', 'linkedom'],
        'WebBrowser.select and WebBrowser.open_url',
        error,
      );
    }
  })();
  return libraries;
}

/** Elements whose text is never content. */
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

/** The text of a node, with a line break around each block element and whitespace collapsed within lines. */
function blockText(root: DomNode): string {
  const parts: string[] = [];
  const walk = (node: DomNode) => {
    if (node.nodeType === 3) {
      parts.push(node.textContent ?? '');
      return;
    }
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return;
    const block = BLOCKS.has(node.nodeName.toUpperCase());
    if (block) parts.push('\n');
    const children = node.childNodes;
    for (let index = 0; index < children.length; index++) walk(children[index]!);
    if (block) parts.push('\n');
  };
  walk(root);
  return tidy(parts.join(''));
}

/** One space between words, no blank lines (Lagent collapses runs of newlines too). */
export function tidy(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/[\s\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/**
 * The main text of an HTML page: Readability's article when it finds one, otherwise the body without scripts,
 * styles, navigation, headers, footers and forms. Text keeps one line per block.
 *
 * @throws ConfigurationError when `@mozilla/readability` or `linkedom` is not installed.
 */
export async function htmlToText(html: string): Promise<PageText> {
  const { Readability, parseHTML } = await loadLibraries();
  const { document } = parseHTML(html);
  const title = tidy(document.title ?? '');
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    article = new Readability(document, { charThreshold: 200 }).parse();
  } catch {
    // Readability gives up on some documents; the plain extraction below still works.
  }
  if (article?.content) {
    const text = blockText(parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document);
    if (text.length >= 200) return { title: tidy(article.title ?? '') || title, text };
  }
  // Readability changes the document it reads: start again from the source.
  const fresh = parseHTML(html).document;
  const noise = fresh.querySelectorAll(NOISE);
  for (let index = noise.length - 1; index >= 0; index--) noise[index]!.remove();
  return { title, text: blockText(fresh.body ?? fresh.documentElement ?? fresh) };
}
