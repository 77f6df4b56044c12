import { useEffect, useRef, useState } from 'preact/hooks';
import { Markdown } from './markdown.jsx';
import { resultOf } from './transcript.js';

function json(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value ?? {}, null, 2);
}

/** `name(arguments)` on one line, for a tool call's summary. */
function oneLine(call) {
  const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
  return `${call.name}(${args.length > 120 ? `${args.slice(0, 120)}…` : args})`;
}

function statusOf(tool) {
  if (tool.declined !== undefined)
    return { label: tool.declined ? `declined: ${tool.declined}` : 'declined', kind: 'declined' };
  if (tool.decision?.approve === false) return { label: 'declined', kind: 'declined' };
  if (tool.result === undefined)
    return tool.waiting
      ? { label: 'awaiting approval', kind: 'waiting' }
      : { label: 'running', kind: 'running' };
  const approved = tool.decision?.approve
    ? tool.decision.arguments !== undefined
      ? 'approved with edits · '
      : 'approved · '
    : '';
  return {
    label: `${approved}${tool.result.error ? 'failed' : 'done'}`,
    kind: tool.result.error ? 'failed' : 'done',
  };
}

/** One tool call inline in the transcript: folded to a line, its arguments and result when opened. */
function ToolCall({ tool }) {
  const status = statusOf(tool);
  return (
    <details
      class={`tool ${status.kind}`}
      data-testid="tool-call"
      data-status={status.kind}
      data-name={tool.call.name}
    >
      <summary>
        <span class="tool-icon" aria-hidden="true">
          ⚙
        </span>
        <code class="tool-name">{oneLine(tool.call)}</code>
        <span class="tool-status" data-testid="tool-status">
          {status.label}
        </span>
      </summary>
      <div class="tool-body">
        <div class="label">arguments</div>
        <pre data-testid="tool-arguments">{json(tool.call.arguments)}</pre>
        {tool.ran !== undefined && (
          <>
            <div class="label">ran with (edited)</div>
            <pre>{json(tool.ran)}</pre>
          </>
        )}
        {tool.result !== undefined && (
          <>
            <div class="label">{tool.result.error ? 'error' : 'result'}</div>
            <pre data-testid="tool-result">{tool.result.text}</pre>
          </>
        )}
      </div>
    </details>
  );
}

function Reasoning({ text }) {
  return (
    <details class="reasoning" data-testid="reasoning">
      <summary>Reasoning</summary>
      <div class="reasoning-text">{text}</div>
    </details>
  );
}

function Assistant({ item, testid = 'message', streaming = false }) {
  const empty = !item.text && item.tools.length === 0 && !item.reasoning;
  return (
    <div class={`message assistant${streaming ? ' streaming' : ''}`} data-testid={testid}>
      <div class="sender">{item.sender ?? 'assistant'}</div>
      {item.reasoning && <Reasoning text={item.reasoning} />}
      {item.text ? (
        <div class="content">
          <Markdown text={item.text} />
        </div>
      ) : empty ? (
        <div class="content">…</div>
      ) : null}
      {item.tools.map((tool) => (
        <ToolCall key={tool.call.id} tool={tool} />
      ))}
    </div>
  );
}

function User({ text, testid = 'message', children }) {
  return (
    <div class="message user" data-testid={testid}>
      <div class="sender">you</div>
      <div class="content plain">{text}</div>
      {children}
    </div>
  );
}

/** The reply being streamed, from its parts (texts and rounds of tool calls). */
function Streaming({ pending }) {
  const items = [];
  for (const part of pending.parts) {
    if (part.kind === 'text') items.push({ kind: 'assistant', text: part.text, tools: [] });
    else {
      const tools = part.calls.map((call, i) => ({
        call,
        result: part.results === undefined ? undefined : resultOf(part.results[i]),
      }));
      const last = items.at(-1);
      if (last && last.tools.length === 0) last.tools = tools;
      else items.push({ kind: 'assistant', text: '', tools });
    }
  }
  if (items.length === 0) items.push({ kind: 'assistant', text: '', tools: [] });
  return (
    <div class="streaming-reply" data-testid="streaming">
      {items.map((item, i) => (
        <Assistant key={i} item={item} testid="streaming-part" streaming={i === items.length - 1} />
      ))}
    </div>
  );
}

/** One tool call waiting for approval: its arguments (editable), Approve, Decline with a reason. */
function InterruptCard({ ask, decided, onDecision }) {
  const original = json(ask.toolCall?.arguments ?? {});
  const [args, setArgs] = useState(original);
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState(undefined);
  const edited = args.trim() !== original.trim();
  const approve = () => {
    if (!edited) return onDecision({ id: ask.id, approve: true });
    try {
      onDecision({ id: ask.id, approve: true, arguments: JSON.parse(args) });
    } catch (e) {
      setProblem(`the arguments are not JSON: ${e.message}`);
    }
  };
  const decline = () =>
    onDecision(
      reason.trim() ? { id: ask.id, approve: false, reason: reason.trim() } : { id: ask.id, approve: false },
    );
  return (
    <div class="interrupt" data-testid="interrupt" data-id={ask.id}>
      <div class="title">
        Run <code>{ask.toolCall?.name}</code>
        {ask.path ? <span class="muted"> (asked by {ask.path})</span> : null}?
      </div>
      {decided ? (
        <div class="decided" data-testid="interrupt-decided">
          {decided.approve ? 'Approved' : 'Declined'} — waiting for your decision on the other calls
        </div>
      ) : (
        <>
          <textarea
            data-testid="interrupt-arguments"
            rows={Math.min(8, args.split('\n').length + 1)}
            value={args}
            onInput={(e) => setArgs(e.currentTarget.value)}
          />
          {problem && <div class="problem">{problem}</div>}
          <div class="row">
            <button type="button" class="primary" data-testid="approve" onClick={approve}>
              {edited ? 'Approve edited' : 'Approve'}
            </button>
            <input
              data-testid="decline-reason"
              placeholder="reason (optional)"
              value={reason}
              onInput={(e) => setReason(e.currentTarget.value)}
            />
            <button type="button" data-testid="decline" onClick={decline}>
              Decline
            </button>
          </div>
        </>
      )}
    </div>
  );
}

/** A message that did not go through: kept, with why, Retry, Edit and Dismiss. */
function Failed({ failure, busy, onRetry, onEdit, onDismiss }) {
  return (
    <User text={failure.text ?? '(your decision)'} testid="failed">
      <div class="failure" role="alert">
        <span data-testid="failure-reason">{failure.stopped ? 'Stopped' : `Not sent: ${failure.error}`}</span>
        <span class="actions">
          <button type="button" data-testid="retry" disabled={busy} onClick={onRetry}>
            Retry
          </button>
          {failure.text !== undefined && (
            <button type="button" data-testid="edit" disabled={busy} onClick={onEdit}>
              Edit
            </button>
          )}
          <button type="button" data-testid="dismiss" onClick={onDismiss}>
            Dismiss
          </button>
        </span>
      </div>
    </User>
  );
}

/**
 * The conversation of the session (its transcript: the person's messages, the model's with their tool calls
 * and results), the reply being streamed (with Stop), messages that failed, the calls waiting for approval and
 * the composer. A message typed while calls wait is sent only once the person says it declines them.
 */
export function Chat({
  items,
  pending,
  failures,
  interrupts,
  busy,
  onSend,
  onStop,
  onDecide,
  onRetry,
  onDismiss,
}) {
  const [draft, setDraft] = useState('');
  const [decisions, setDecisions] = useState([]);
  const [confirming, setConfirming] = useState(undefined);
  const end = useRef(null);
  const input = useRef(null);
  const ids = interrupts.map((ask) => ask.id).join('\n');
  useEffect(() => setDecisions([]), [ids]);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [items, pending, interrupts, failures]);
  const decide = (decision) => {
    const next = [...decisions.filter((d) => d.id !== decision.id), decision];
    setDecisions(next);
    if (interrupts.every((ask) => next.some((d) => d.id === ask.id))) onDecide(next);
  };
  const submit = (event) => {
    event.preventDefault();
    const value = draft.trim();
    if (!value || busy) return;
    if (interrupts.length > 0) {
      setConfirming(value);
      return;
    }
    setDraft('');
    onSend(value);
  };
  const sendDeclining = () => {
    const value = confirming;
    setConfirming(undefined);
    setDraft('');
    onSend(value, interrupts);
  };
  return (
    <section class="chat">
      <div class="messages" data-testid="messages">
        {items.length === 0 && !pending && failures.length === 0 && (
          <div class="empty">No messages in this session yet.</div>
        )}
        {items.map((item, i) =>
          item.kind === 'user' ? (
            <User key={i} text={item.text} />
          ) : item.kind === 'results' ? (
            <div key={i} class="message assistant" data-testid="message">
              {item.tools.map((tool) => (
                <ToolCall key={tool.call.id} tool={tool} />
              ))}
            </div>
          ) : (
            <Assistant key={i} item={item} />
          ),
        )}
        {pending?.user !== undefined && <User text={pending.user} testid="sending" />}
        {pending && <Streaming pending={pending} />}
        {!busy &&
          failures.map((failure) => (
            <Failed
              key={failure.key}
              failure={failure}
              busy={busy}
              onRetry={() => onRetry(failure)}
              onEdit={() => {
                setDraft(failure.text);
                onDismiss(failure);
                input.current?.focus();
              }}
              onDismiss={() => onDismiss(failure)}
            />
          ))}
        {!busy &&
          interrupts.map((ask) => (
            <InterruptCard
              key={ask.id}
              ask={ask}
              decided={decisions.find((d) => d.id === ask.id)}
              onDecision={decide}
            />
          ))}
        <div ref={end} />
      </div>
      {confirming !== undefined && (
        <div class="confirm" role="alertdialog" data-testid="confirm-decline">
          <span>
            {interrupts.length === 1 ? 'A tool call waits' : `${interrupts.length} tool calls wait`} for your
            decision. Sending this message declines {interrupts.length === 1 ? 'it' : 'them'}.
          </span>
          <span class="actions">
            <button type="button" class="danger" data-testid="confirm-decline-send" onClick={sendDeclining}>
              Decline and send
            </button>
            <button
              type="button"
              data-testid="confirm-decline-cancel"
              onClick={() => setConfirming(undefined)}
            >
              Keep waiting
            </button>
          </span>
        </div>
      )}
      <form class="composer" onSubmit={submit}>
        <textarea
          ref={input}
          data-testid="input"
          rows={2}
          placeholder={interrupts.length ? 'Decide above, or write something else' : 'Message the agent'}
          value={draft}
          onInput={(e) => setDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) submit(e);
          }}
        />
        {busy ? (
          <button type="button" class="danger" data-testid="stop" onClick={onStop}>
            Stop
          </button>
        ) : (
          <button type="submit" class="primary" data-testid="send" disabled={!draft.trim()}>
            Send
          </button>
        )}
      </form>
    </section>
  );
}
