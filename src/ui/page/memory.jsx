function text(content) {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

/** Every memory of the session's state dict (`memory`, `agent.memory`, ...), its messages one per line. */
export function MemoryView({ memory }) {
  const keys = Object.keys(memory);
  return (
    <section class="memory">
      <h2>Memory</h2>
      {keys.length === 0 && <div class="empty">Nothing in memory.</div>}
      {keys.map((key) => {
        const messages = Array.isArray(memory[key]) ? memory[key] : [];
        return (
          <details key={key} open={messages.length > 0} data-testid="memory" data-key={key}>
            <summary>
              {key} <span class="count">{messages.length}</span>
            </summary>
            <ol>
              {messages.map((m, i) => (
                <li key={i}>
                  <b>{m.sender}</b>
                  {m.type ? <i> {m.type}</i> : null}: {text(m.content)}
                  {m.formatted?.tool_calls || m.formatted?.toolCalls ? (
                    <code> {JSON.stringify(m.formatted.tool_calls ?? m.formatted.toolCalls)}</code>
                  ) : null}
                </li>
              ))}
            </ol>
          </details>
        );
      })}
    </section>
  );
}

/**
 * The session's working memory: the record its last `workingMemory` event gave, else the one its state dict
 * holds (`workingMemory`, `agent.workingMemory`, ...: a record per session); nothing when the agent has none.
 */
export function WorkingMemoryView({ events, memory }) {
  let record;
  let where;
  for (let i = events.length - 1; i >= 0 && record === undefined; i--) {
    const event = events[i];
    if (event.kind !== 'workingMemory') continue;
    record = event.detail?.value;
    where = event.detail?.scope === 'resource' ? `resource ${event.detail.resourceId}` : 'session';
  }
  if (record === undefined) {
    const key = Object.keys(memory).find((k) => k === 'workingMemory' || k.endsWith('.workingMemory'));
    if (key === undefined) return null;
    const stored = Array.isArray(memory[key]) ? memory[key].at(-1) : undefined;
    record = stored === undefined ? '' : text(stored.content);
    where = 'session';
  }
  return (
    <section class="working-memory">
      <h2>
        Working memory <span class="muted">· {where}</span>
      </h2>
      {record === '' ? <div class="empty">Empty.</div> : <pre data-testid="working-memory">{record}</pre>}
    </section>
  );
}
