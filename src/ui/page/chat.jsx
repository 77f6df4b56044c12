import { useEffect, useRef, useState } from 'preact/hooks';

function text(content) {
  return typeof content === 'string' ? content : JSON.stringify(content, null, 2);
}

function Message({ sender, content, type, testid }) {
  const role = sender === 'user' ? 'user' : 'assistant';
  return (
    <div class={`message ${role}${type ? ` ${type}` : ''}`} data-testid={testid}>
      <div class="sender">{sender}</div>
      <div class="content">{text(content)}</div>
    </div>
  );
}

/** One tool call waiting for approval: its arguments (editable), Approve, Decline with a reason. */
function InterruptCard({ ask, onDecision }) {
  const original = text(ask.toolCall?.arguments ?? {});
  const [args, setArgs] = useState(original);
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState(undefined);
  const approve = () => {
    if (args.trim() === original.trim()) return onDecision({ id: ask.id, approve: true });
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
    <div class="interrupt" data-testid="interrupt">
      <div class="title">
        Approve <code>{ask.toolCall?.name}</code>
        {ask.path ? ` (asked by ${ask.path})` : ''}?
      </div>
      <textarea
        data-testid="interrupt-arguments"
        rows={Math.min(8, args.split('\n').length + 1)}
        value={args}
        onInput={(e) => setArgs(e.currentTarget.value)}
      />
      {problem && <div class="problem">{problem}</div>}
      <div class="row">
        <button type="button" class="primary" data-testid="approve" onClick={approve}>
          {args.trim() === original.trim() ? 'Approve' : 'Approve edited'}
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
    </div>
  );
}

/** The conversation of the session (its root agent's memory), the reply being streamed, interrupts, the input. */
export function Chat({ memory, pending, interrupts, busy, onSend, onDecide }) {
  const [draft, setDraft] = useState('');
  const [decisions, setDecisions] = useState([]);
  const end = useRef(null);
  useEffect(() => setDecisions([]), [interrupts]);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [memory, pending, interrupts]);
  const decide = (decision) => {
    const next = [...decisions.filter((d) => d.id !== decision.id), decision];
    setDecisions(next);
    if (next.length === interrupts.length) onDecide(next);
  };
  const submit = (event) => {
    event.preventDefault();
    const value = draft.trim();
    if (!value || busy) return;
    setDraft('');
    onSend(value);
  };
  const open = interrupts.filter((ask) => !decisions.some((d) => d.id === ask.id));
  return (
    <section class="chat">
      <div class="messages" data-testid="messages">
        {memory.length === 0 && !pending && <div class="empty">No messages in this session yet.</div>}
        {memory.map((m, i) => (
          <Message key={i} sender={m.sender} content={m.content} type={m.type} testid="message" />
        ))}
        {pending?.user !== undefined && <Message sender="user" content={pending.user} testid="message" />}
        {pending && (
          <div class="message assistant streaming" data-testid="streaming">
            <div class="sender">assistant</div>
            <div class="content">{pending.text || '…'}</div>
          </div>
        )}
        {!busy && open.map((ask) => <InterruptCard key={ask.id} ask={ask} onDecision={decide} />)}
        <div ref={end} />
      </div>
      <form class="composer" onSubmit={submit}>
        <textarea
          data-testid="input"
          rows={2}
          placeholder={interrupts.length ? 'Decide above, or write something else' : 'Message the agent'}
          value={draft}
          onInput={(e) => setDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) submit(e);
          }}
        />
        <button type="submit" class="primary" data-testid="send" disabled={busy || !draft.trim()}>
          Send
        </button>
      </form>
    </section>
  );
}
