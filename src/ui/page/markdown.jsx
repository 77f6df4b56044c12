import { Lexer } from 'marked';

/*
 * Markdown as Preact nodes. `marked` reads the text into tokens (CommonMark and GitHub's tables, task lists,
 * strikethrough, autolinks); the tokens become elements here, and no text is ever parsed as HTML: raw HTML in
 * a reply shows as the text it is, links go only to http(s) and mailto addresses (in a new tab, no referrer),
 * and images show as links (the page's policy loads no image from elsewhere).
 */

const SAFE_LINK = /^(https?:|mailto:)/i;

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Text with the character references the lexer leaves in it (`&amp;`, `&#39;`) read. */
function decode(text) {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function inline(tokens, key = '') {
  return (tokens ?? []).map((token, i) => inlineToken(token, `${key}${i}`));
}

function inlineToken(token, key) {
  switch (token.type) {
    case 'strong':
      return <strong key={key}>{inline(token.tokens, key)}</strong>;
    case 'em':
      return <em key={key}>{inline(token.tokens, key)}</em>;
    case 'del':
      return <del key={key}>{inline(token.tokens, key)}</del>;
    case 'codespan':
      return <code key={key}>{decode(token.text)}</code>;
    case 'br':
      return <br key={key} />;
    case 'link':
      return SAFE_LINK.test(token.href) ? (
        <a
          key={key}
          href={token.href}
          title={token.title ?? undefined}
          target="_blank"
          rel="noopener noreferrer"
        >
          {inline(token.tokens, key)}
        </a>
      ) : (
        <span key={key}>{inline(token.tokens, key)}</span>
      );
    case 'image':
      return SAFE_LINK.test(token.href) ? (
        <a key={key} href={token.href} target="_blank" rel="noopener noreferrer">
          [image: {token.text || token.href}]
        </a>
      ) : (
        <span key={key}>[image: {token.text}]</span>
      );
    case 'text':
      return token.tokens ? inline(token.tokens, key) : decode(token.text);
    case 'escape':
      return token.text;
    default:
      // html tags and anything else: the text as written.
      return token.raw ?? '';
  }
}

function block(tokens, key = '') {
  return (tokens ?? []).map((token, i) => blockToken(token, `${key}${i}.`));
}

function blockToken(token, key) {
  switch (token.type) {
    case 'space':
    case 'def':
      return null;
    case 'paragraph':
      return <p key={key}>{inline(token.tokens, key)}</p>;
    case 'heading': {
      const Tag = `h${Math.min(6, Math.max(3, token.depth + 2))}`;
      return <Tag key={key}>{inline(token.tokens, key)}</Tag>;
    }
    case 'code':
      return (
        <pre key={key} class="code" data-lang={token.lang || undefined}>
          {token.lang ? <span class="lang">{token.lang}</span> : null}
          <code>{token.text}</code>
        </pre>
      );
    case 'blockquote':
      return <blockquote key={key}>{block(token.tokens, key)}</blockquote>;
    case 'hr':
      return <hr key={key} />;
    case 'list': {
      const items = token.items.map((item, i) => (
        <li key={`${key}${i}`}>
          {item.task ? <input type="checkbox" checked={item.checked} disabled /> : null}
          {item.loose ? block(item.tokens, `${key}${i}.`) : tight(item.tokens, `${key}${i}.`)}
        </li>
      ));
      return token.ordered ? (
        <ol key={key} start={token.start === '' ? undefined : token.start}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case 'table':
      return (
        <div key={key} class="table">
          <table>
            <thead>
              <tr>
                {token.header.map((cell, i) => (
                  <th key={i} style={cell.align ? { textAlign: cell.align } : undefined}>
                    {inline(cell.tokens, `${key}h${i}`)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {token.rows.map((row, r) => (
                <tr key={r}>
                  {row.map((cell, i) => (
                    <td key={i} style={cell.align ? { textAlign: cell.align } : undefined}>
                      {inline(cell.tokens, `${key}${r}.${i}`)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    case 'text':
      return <p key={key}>{token.tokens ? inline(token.tokens, key) : decode(token.text)}</p>;
    default:
      // Raw HTML blocks and anything unknown: shown as the text they are.
      return (
        <p key={key} class="raw">
          {token.raw}
        </p>
      );
  }
}

/** The blocks of a tight list item: its text without a paragraph around it. */
function tight(tokens, key) {
  return (tokens ?? []).map((token, i) =>
    token.type === 'text' ? (
      <span key={`${key}${i}`}>{token.tokens ? inline(token.tokens, `${key}${i}`) : decode(token.text)}</span>
    ) : (
      blockToken(token, `${key}${i}.`)
    ),
  );
}

/** A model's text as rendered markdown; a text that cannot be read shows as it is. */
export function Markdown({ text }) {
  let tokens;
  try {
    tokens = Lexer.lex(String(text ?? ''), { gfm: true });
  } catch {
    return <div class="markdown plain">{String(text ?? '')}</div>;
  }
  return <div class="markdown">{block(tokens)}</div>;
}
