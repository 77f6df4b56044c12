// The conversation as the page shows it, read from a session's memory (Lagent's JSON shape): the person's
// messages, the model's (its text, its reasoning, the tool calls it made) and each call's result beside it.

/** The tool calls a message makes (`formatted.toolCalls`, either spelling), else undefined. */
export function toolCallsOf(message) {
  const calls = message?.formatted?.toolCalls ?? message?.formatted?.tool_calls;
  return Array.isArray(calls) && calls.length > 0 ? calls : undefined;
}

/** The reasoning a model message kept (`extra_info.reasoning`), when it has some. */
export function reasoningOf(message) {
  const extra = message?.extra_info ?? message?.extraInfo;
  const reasoning = extra && typeof extra === 'object' ? extra.reasoning : undefined;
  return typeof reasoning === 'string' && reasoning.trim() !== '' ? reasoning : undefined;
}

function isResult(value) {
  return value !== null && typeof value === 'object' && ('result' in value || 'errmsg' in value);
}

/** A tool's answer (an `ActionReturn`, or its JSON) as text, and whether it failed. */
export function resultOf(value) {
  if (!isResult(value))
    return { text: typeof value === 'string' ? value : JSON.stringify(value, null, 2), error: false };
  if (typeof value.errmsg === 'string' && value.errmsg !== '') return { text: value.errmsg, error: true };
  const parts = Array.isArray(value.result) ? value.result : [value.result];
  return {
    text: parts
      .map((part) => (typeof part?.content === 'string' ? part.content : JSON.stringify(part)))
      .join('\n'),
    error: false,
  };
}

/** The text a message's content shows. */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  return JSON.stringify(content, null, 2);
}

/** Arguments as comparable text (an object, or its JSON text). */
function argumentsText(args) {
  if (typeof args !== 'string') return JSON.stringify(args ?? {});
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return args;
  }
}

/** Whether a message answers tool calls: an executor's reply (a list of results, or one). */
function isResults(message) {
  const content = message?.content;
  return Array.isArray(content) ? content.length > 0 && content.every(isResult) : isResult(content);
}

const DECLINED = /^The user declined this call of [^:.]+(?:: (.*?))?\. It was not run\.$/s;

/**
 * The transcript of a memory: `{ kind: 'user', text }`, `{ kind: 'assistant', text, reasoning, tools }` (a
 * tool being `{ call, result, declined, decision }`) and `{ kind: 'results', tools }` (results of calls the
 * transcript has no call for). `decisions` (by tool-call id) are the person's answers the page saw; `waiting`
 * holds the ids of the calls that wait for one.
 */
export function buildTranscript(memory, decisions = new Map(), waiting = new Set()) {
  const items = [];
  let open; // the last model message whose calls wait for their results
  for (const message of memory ?? []) {
    if (message?.sender === 'user' && !isResults(message)) {
      items.push({ kind: 'user', text: textOf(message.content) });
      open = undefined;
      continue;
    }
    if (isResults(message)) {
      const results = Array.isArray(message.content) ? message.content : [message.content];
      const calls = toolCallsOf(message) ?? [];
      const target = open ?? { kind: 'results', tools: [] };
      results.forEach((value, i) => {
        const call = calls[i];
        const result = resultOf(value);
        const match = result.error ? DECLINED.exec(result.text) : null;
        let tool = call
          ? target.tools.find((t) => t.call.id === call.id && t.result === undefined)
          : undefined;
        if (!tool) tool = target.tools.find((t) => t.result === undefined && !call);
        if (!tool) {
          tool = {
            call: call ?? { id: `result-${i}`, name: value?.type ?? 'tool', arguments: value?.args ?? {} },
          };
          target.tools.push(tool);
        }
        tool.result = result;
        if (call && argumentsText(tool.call.arguments) !== argumentsText(call.arguments))
          tool.ran = call.arguments;
        if (match) tool.declined = match[1] ?? '';
        const decision = decisions.get(tool.call.id);
        if (decision) tool.decision = decision;
      });
      if (!open) items.push(target);
      open = undefined;
      continue;
    }
    const calls = toolCallsOf(message);
    const item = {
      kind: 'assistant',
      sender: message?.sender,
      text: typeof message?.content === 'string' ? message.content : textOf(message?.content),
      reasoning: reasoningOf(message),
      tools: (calls ?? []).map((call) => ({
        call,
        decision: decisions.get(call.id),
        waiting: waiting.has(call.id),
      })),
    };
    items.push(item);
    open = calls ? item : undefined;
  }
  return items;
}

/** The decisions of the `resume` events of a session, by interrupt id (the last one of an id wins). */
export function decisionsOf(events) {
  const decisions = new Map();
  for (const event of events) {
    if (event.kind !== 'resume' || event.path !== '') continue;
    for (const decision of event.detail?.decisions ?? []) decisions.set(decision.id, decision);
  }
  return decisions;
}
