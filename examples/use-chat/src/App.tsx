import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  type DynamicToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from 'ai';
import type { AgentProgress } from 'lagent-ts/distributed';
import { type FormEvent, useEffect, useMemo, useState } from 'react';

/** UI messages of this app: `data-agent` parts carry a sub-agent's progress (lagent-ts's `AgentProgress`). */
type ChatMessage = UIMessage<unknown, { agent: AgentProgress }>;

// Where `lagent serve` is: `?server=` of this page's address, else VITE_LAGENT_URL, else the default port.
const params = new URLSearchParams(location.search);
const server = params.get('server') ?? import.meta.env.VITE_LAGENT_URL ?? 'http://127.0.0.1:8090';
// A server started with --token: pass it in the address's fragment (#token=...), which no request carries.
const token = new URLSearchParams(location.hash.slice(1)).get('token');
const authorization: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};

/**
 * The chat id is the agent's session id: the server keeps the conversation. It goes in the page's address
 * (`?chat=`), so a reload comes back to the same chat, and the messages shown so far are kept for the tab.
 */
function chatOfPage(): { id: string; saved: ChatMessage[] | undefined } {
  let id = params.get('chat');
  if (id === null) {
    id = crypto.randomUUID();
    params.set('chat', id);
    history.replaceState(null, '', `?${params}${location.hash}`);
  }
  const saved = sessionStorage.getItem(`lagent-chat:${id}`);
  return { id, saved: saved === null ? undefined : (JSON.parse(saved) as ChatMessage[]) };
}

export function App() {
  const [chat] = useState(chatOfPage);
  const chatId = chat.id;
  const transport = useMemo(
    () =>
      new DefaultChatTransport<ChatMessage>({
        api: `${server}/api/chat`,
        headers: authorization,
      }),
    [],
  );
  const { messages, sendMessage, status, stop, error, addToolApprovalResponse } = useChat<ChatMessage>({
    id: chatId,
    ...(chat.saved ? { messages: chat.saved } : {}),
    transport,
    // A reply still running when the page (re)loads is picked up where it is (GET /api/chat/{id}/stream).
    resume: true,
    // Approving or declining a tool call sends the answer at once; the same assistant message goes on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  // A reply still streaming is left out: a reload gets it whole from the server.
  useEffect(() => {
    const streaming =
      (status === 'submitted' || status === 'streaming') && messages.at(-1)?.role === 'assistant';
    const shown = streaming ? messages.slice(0, -1) : messages;
    sessionStorage.setItem(`lagent-chat:${chatId}`, JSON.stringify(shown));
  }, [chatId, messages, status]);
  const [input, setInput] = useState('');
  const busy = status === 'submitted' || status === 'streaming';

  // The reply is a run on the server, which a closed connection does not stop: Stop also cancels the run (the
  // assistant message's id is the run's).
  const stopRun = () => {
    const last = messages.at(-1);
    void stop();
    if (last?.role === 'assistant')
      void fetch(`${server}/runs/${encodeURIComponent(last.id)}/cancel`, {
        method: 'POST',
        headers: authorization,
      });
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (input.trim() === '' || busy) return;
    void sendMessage({ text: input });
    setInput('');
  };

  return (
    <main>
      <header>
        <h1>lagent-ts · useChat</h1>
        <span className={`status ${status}`}>{status}</span>
      </header>
      <ol className="messages">
        {messages.map((message) => (
          <li key={message.id} className={`message ${message.role}`}>
            {message.parts.map((part, index) => {
              const key = `${message.id}-${index}`;
              switch (part.type) {
                case 'text':
                  return <p key={key}>{part.text}</p>;
                case 'reasoning':
                  return (
                    <p key={key} className="reasoning">
                      {part.text}
                    </p>
                  );
                case 'dynamic-tool':
                  return (
                    <ToolCall
                      key={key}
                      part={part}
                      onAnswer={(approved) =>
                        addToolApprovalResponse({
                          id: part.approval!.id,
                          approved,
                          ...(approved ? {} : { reason: 'declined on the page' }),
                        })
                      }
                    />
                  );
                case 'data-agent':
                  return <SubAgent key={key} progress={part.data} />;
                default:
                  return null;
              }
            })}
          </li>
        ))}
      </ol>
      {error && <p className="error">{error.message}</p>}
      <form onSubmit={submit}>
        <input
          value={input}
          onChange={(event) => setInput(event.target.value)}
          placeholder='Try "weather in Paris", "delete notes.txt" or "research A2A"'
          aria-label="message"
        />
        {busy ? (
          <button type="button" onClick={stopRun}>
            Stop
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </main>
  );
}

/** A tool call of the agent, inline: its input, then its output; Approve / Decline while it waits. */
function ToolCall({ part, onAnswer }: { part: DynamicToolUIPart; onAnswer: (approved: boolean) => void }) {
  return (
    <div className={`tool ${part.state}`} data-testid="tool">
      <code>
        {part.title ?? part.toolName}({JSON.stringify(part.input)})
      </code>
      {part.state === 'approval-requested' && (
        <span className="approval">
          <button type="button" onClick={() => onAnswer(true)}>
            Approve
          </button>
          <button type="button" onClick={() => onAnswer(false)}>
            Decline
          </button>
        </span>
      )}
      {part.state === 'output-available' && <span className="output">→ {String(part.output)}</span>}
      {part.state === 'output-denied' && <span className="output">declined</span>}
      {part.state === 'output-error' && <span className="output">failed: {part.errorText}</span>}
    </div>
  );
}

/** A sub-agent of the tree at work: which agent, its state, its tool calls. */
function SubAgent({ progress }: { progress: AgentProgress }) {
  return (
    <div className={`subagent ${progress.status}`} data-testid="subagent">
      <strong>{progress.name}</strong> <span>{progress.status}</span>
      <ul>
        {progress.toolCalls.map((call) => (
          <li key={call.id}>
            {call.name}({JSON.stringify(call.arguments)}){' '}
            {call.status === 'done' ? `→ ${call.result}` : call.status}
          </li>
        ))}
      </ul>
    </div>
  );
}
