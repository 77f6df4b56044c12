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
