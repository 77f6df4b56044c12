import { useState } from 'preact/hooks';

const RUNNING = new Set(['callStart', 'llmStart', 'toolStart', 'resume']);

function statusOf(kind) {
  if (kind === undefined) return 'idle';
  if (kind === 'error') return 'error';
  if (kind === 'interrupt') return 'waiting';
  return RUNNING.has(kind) ? 'running' : 'done';
}

/** One line of text saying what an event carries. */
function summary(event) {
  const d = event.detail ?? {};
  switch (event.kind) {
    case 'callStart':
      return (d.messages ?? []).map((m) => m.content).join(' | ');
    case 'callEnd':
      return d.content;
    case 'llmStart':
      return `${d.messages} messages`;
    case 'llmEnd':
      return d.response;
    case 'error':
      return d.error;
    case 'toolStart':
      return (d.toolCalls ?? []).map((c) => `${c.name}(${c.arguments})`).join(', ');
    case 'toolEnd':
      return (d.toolCalls ?? []).map((c, i) => `${c.name} → ${d.results?.[i] ?? ''}`).join(', ');
    case 'interrupt':
      return (d.interrupts ?? []).map((a) => `asks to run ${a.toolCall?.name}`).join(', ');
    case 'resume':
      return (d.decisions ?? []).map((x) => `${x.approve ? 'approved' : 'declined'} ${x.id}`).join(', ');
    case 'recall':
      return `${count((d.recalled ?? []).length + (d.omitted ?? 0), 'message')} for “${d.query ?? ''}”`;
    case 'workingMemory':
      return d.value;
    default:
      return '';
  }
}

/** What semantic recall placed before a model call: each message's score, sender and text. */
function Recalled({ recalled }) {
  if (recalled.length === 0) return null;
  return (
    <ol class="recalled" data-testid="recalled">
      {recalled.map((message, i) => (
        <li key={i} data-testid="recalled-message">
          <span class="score">{Number(message.score).toFixed(2)}</span> <b>{message.sender}</b>
          {message.sessionId !== undefined && <span class="muted"> · {String(message.sessionId)}</span>}:{' '}
          {message.content}
        </li>
      ))}
    </ol>
  );
}

function count(n, noun) {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function label(path) {
  return path === '' ? '(root)' : path;
}

/**
 * The agent tree, drawn from the server's list and one session's events: each agent's name, path, state
 * (running, waiting, done, failed), calls, time of the last call and tokens in that session, the session's
 * totals; below, its events as they came (newest first).
 */
export function Tree({ info, events, session }) {
  const [open, setOpen] = useState(undefined);
  const nodes = new Map();
  for (const node of info?.tree ?? []) nodes.set(node.path, { ...node, calls: 0, tokens: 0 });
  for (const event of events) {
    let node = nodes.get(event.path);
    if (!node) {
      node = { path: event.path, name: event.agent, className: '', calls: 0, tokens: 0 };
      nodes.set(event.path, node);
    }
    node.last = event.kind;
    if (event.kind === 'callStart') node.calls++;
    if (event.kind === 'callEnd' || event.kind === 'error' || event.kind === 'interrupt') node.ms = event.ms;
    if (event.tokens) node.tokens += event.tokens.prompt + event.tokens.completion;
  }
  const sorted = [...nodes.values()].sort((a, b) =>
    a.path === '' ? -1 : b.path === '' ? 1 : a.path.localeCompare(b.path),
  );
  const recent = events.slice(-200).reverse();
  let tokens = 0;
  let models = 0;
  let tools = 0;
  for (const event of events) {
    if (event.kind === 'llmEnd') models++;
    if (event.kind === 'toolEnd') tools += event.detail?.toolCalls?.length ?? 0;
    if (event.tokens) tokens += event.tokens.prompt + event.tokens.completion;
  }
  return (
    <section class="tree">
      <h2>
        Agents <span class="muted">· session {session}</span>
      </h2>
      <div class="figures" data-testid="figures">
        <span data-testid="figure-models">{count(models, 'model call')}</span>
        <span data-testid="figure-tools">{count(tools, 'tool call')}</span>
        <span data-testid="figure-tokens">{count(tokens, 'token')}</span>
      </div>
      <ul data-testid="tree">
        {sorted.map((node) => {
          const depth = node.path === '' ? 0 : node.path.split('.').length;
          const status = statusOf(node.last);
          return (
            <li
              key={node.path}
              class={`node ${status}`}
              style={{ paddingLeft: `${0.5 + depth * 1.2}rem` }}
              data-testid="tree-node"
              data-path={node.path}
              data-status={status}
            >
              <span class="dot" title={status} />
              <span class="name" title={node.name}>
                {node.name}
              </span>
              <span class="path" title={label(node.path)}>
                {label(node.path)}
              </span>
              <span class="class" title={node.className}>
                {node.className}
              </span>
              <span class="stats">
                {node.calls > 0 && `${node.calls} call${node.calls > 1 ? 's' : ''}`}
                {node.ms !== undefined && ` · ${node.ms} ms`}
                {node.tokens > 0 && ` · ${node.tokens} tokens`}
              </span>
            </li>
          );
        })}
      </ul>
      <h2>
        Events <span class="muted">· session {session}</span>
      </h2>
      <ol class="events" data-testid="events">
        {recent.length === 0 && <li class="empty">No events yet.</li>}
        {recent.map((event) => (
          <li key={event.seq} class={`event kind-${event.kind}`} data-testid="event" data-kind={event.kind}>
            <button type="button" onClick={() => setOpen(open === event.seq ? undefined : event.seq)}>
              <span class="kind">{event.kind}</span>
              <span class="path">{label(event.path)}</span>
              {event.ms !== undefined && <span class="ms">{event.ms} ms</span>}
              {event.tokens && <span class="ms">{event.tokens.prompt + event.tokens.completion} tok</span>}
              <span class="summary">{summary(event)}</span>
            </button>
            {event.kind === 'recall' && <Recalled recalled={event.detail?.recalled ?? []} />}
            {open === event.seq && <pre>{JSON.stringify(event, null, 2)}</pre>}
          </li>
        ))}
      </ol>
    </section>
  );
}
