import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { AgentMessage } from '../schema/agent-message';
import {
  type Decision,
  INTERRUPT_TYPE,
  type Interrupt,
  interruptsOf,
  resumeWith,
} from '../schema/interrupts';
import type { SessionId } from '../schema/session';
import { AgentStatusCode } from '../schema/status';
import { toolCallsOf } from '../schema/tool-calls';
import { type AgentLike, runAgent } from './agent-like';
import { messageOf } from './errors';
import { ReplyPrinter } from './reply-printer';
import { terminalText } from './terminal-text';

/** Options of {@link runChat}. */
export interface ChatOptions {
  /** The session the conversation uses. @default 0 */
  sessionId?: SessionId | undefined;
  /** Where lines come from; a terminal gets line editing and Ctrl-C handling. @default process.stdin */
  input?: (NodeJS.ReadableStream & { isTTY?: boolean | undefined }) | undefined;
  /** Where the prompt and replies go. @default process.stdout */
  output?: NodeJS.WritableStream | undefined;
  /** Where errors and `[stopped]` go. @default process.stderr */
  errorOutput?: NodeJS.WritableStream | undefined;
  /**
   * Show what a reasoning model thinks before its answer, dimmed (`--reasoning`): streamed as it comes, or the
   * reply's `extraInfo.reasoning` when the agent does not stream. @default false
   */
  showReasoning?: boolean | undefined;
}

/** Dim text (SGR 2) for a terminal; plain text elsewhere. */
function dim(text: string, terminal: boolean): string {
  return terminal ? `\x1b[2m${text}\x1b[22m` : text;
}

export const CHAT_HELP = `Commands:
  /pending                   the tool calls waiting for your approval
  /approve [ID|all] [JSON]   run a waiting call (JSON: edited arguments); the only one when ID is left out
  /decline [ID|all] [REASON] do not run it; the model reads the reason
  /reset        clear the conversation (the agent's memory of this session)
  /save FILE    write the agent's state (its state dict, Lagent's JSON shape) to FILE
  /load FILE    restore a state written by /save
  /help         this list
  /exit         leave (or Ctrl-D, or Ctrl-C at an empty prompt)
Ctrl-C while the agent answers stops the answer; the conversation stays as it was before the question.
While a call waits for approval, a message is sent only when typed twice in a row: it declines what waits.`;

const S = AgentStatusCode;

/** Text of a message's content for the terminal, without the control sequences a model could send it. */
function render(content: unknown): string {
  if (typeof content === 'string') return terminalText(content);
  if (content === null || content === undefined) return '';
  try {
    return terminalText(JSON.stringify(content, null, 2));
  } catch {
    return terminalText(String(content));
  }
}

/**
 * Opens `path` for `/save` or `/load`, refusing anything but a regular file: a FIFO or a device would block
 * the prompt forever (or never end). The file is opened without blocking, then checked, so it cannot change
 * in between.
 */
async function openRegular(path: string, mode: 'read' | 'write') {
  const flags =
    mode === 'read'
      ? constants.O_RDONLY | constants.O_NONBLOCK
      : constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, flags, 0o644);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENXIO') throw new Error(`${path} is not a regular file`);
    throw error;
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Error(`${path} is not a regular file`);
    if (mode === 'write') await handle.truncate(0);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

function countMessages(state: unknown): number {
  if (state === null || typeof state !== 'object') return 0;
  return Object.values(state).reduce<number>(
    (sum, memory) => sum + (Array.isArray(memory) ? memory.length : 0),
    0,
  );
}

/** The longest tool result the terminal shows (the rest is cut, the model got all of it). */
const MAX_RESULT = 500;

/** A tool result (an `ActionReturn`, or its JSON) as one short text. */
function resultText(item: unknown): string {
  const r = item as { errmsg?: unknown; result?: unknown } | null;
  let text: string;
  if (r !== null && typeof r === 'object' && typeof r.errmsg === 'string' && r.errmsg !== '')
    text = `error: ${r.errmsg}`;
  else if (r !== null && typeof r === 'object' && Array.isArray(r.result))
    text = r.result
      .map((part: { content?: unknown }) =>
        typeof part?.content === 'string' ? part.content : JSON.stringify(part),
      )
      .join('\n');
  else text = typeof item === 'string' ? item : (JSON.stringify(item) ?? String(item));
  text = terminalText(text).replace(/\s*\n\s*/g, ' ');
  return text.length > MAX_RESULT ? `${text.slice(0, MAX_RESULT)}…` : text;
}

/** One waiting call as the terminal shows it: `Delete {"path":"/tmp/a"} (id call_2, asked by janitor)`. */
function describeInterrupt(ask: Interrupt): string {
  const args = ask.toolCall?.arguments;
  const shown = typeof args === 'string' ? args : JSON.stringify(args ?? {});
  const by = ask.path ? `, asked by ${ask.path}` : '';
  return terminalText(`${ask.toolCall?.name ?? '?'} ${shown} (id ${ask.id}${by})`);
}

/** The calls an `/approve` or `/decline` names: `all`, an id, or the only one waiting; and the rest of the line. */
function chosen(
  waiting: readonly Interrupt[],
  argument: string,
  command: string,
): { asks: Interrupt[]; rest: string } {
  if (waiting.length === 0) throw new Error('nothing waits for a decision');
  const [first = '', ...others] = argument.split(/\s+/);
  const rest = others.join(' ').trim();
  if (first === 'all') return { asks: [...waiting], rest };
  const named = waiting.find((ask) => ask.id === first);
  if (named !== undefined) return { asks: [named], rest };
  if (waiting.length === 1) return { asks: [waiting[0]!], rest: argument };
  throw new Error(
    `${waiting.length} calls wait: ${command} ID (or all); ${first === '' ? '/pending lists them' : `no call has the id ${terminalText(first)}`}`,
  );
}

/** Edited arguments given to `/approve`: a JSON object. */
function editedArguments(text: string): Record<string, unknown> | undefined {
  if (text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`the edited arguments are not JSON: ${messageOf(error)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error('the edited arguments must be a JSON object, e.g. {"path": "/tmp/b"}');
  }
  return value as Record<string, unknown>;
}

/**
 * The `lagent chat` REPL: each line is a question to the agent, its reply streams as it arrives. Slash
 * commands reset, save and load the session's state, and answer tool calls waiting for approval (`/pending`,
 * `/approve`, `/decline`). A message typed while a call waits is not sent at once (the agent would decline
 * the call): the REPL says so, and sends it when it is typed again. Resolves when the user leaves.
 */
export async function runChat(agent: AgentLike, options: ChatOptions = {}): Promise<void> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const errors = options.errorOutput ?? process.stderr;
  const sessionId = options.sessionId ?? 0;
  const terminal = input.isTTY === true;
  const rl = createInterface({ input, output, prompt: '> ', terminal, historySize: 200 });
  let current: AbortController | undefined;

  const interrupt = () => {
    if (current) {
      current.abort(new Error('stopped by Ctrl-C'));
      return;
    }
    if (rl.line.length > 0) {
      // Ctrl-C with text at the prompt drops that text, as shells do.
      rl.write(null, { ctrl: true, name: 'e' });
      rl.write(null, { ctrl: true, name: 'u' });
      return;
    }
    rl.close();
  };
  rl.on('SIGINT', interrupt);
  // Without a terminal (piped input), Ctrl-C reaches the process as a signal.
  if (!terminal) process.on('SIGINT', interrupt);

  // The calls the session waits for: from the agent (pendingInterrupts) when it can tell, else the last reply.
  let waiting: Interrupt[] = [];
  // Decisions taken so far: the round goes on once every waiting call has one (a round runs as a whole).
  const decided = new Map<string, Decision>();
  // A message typed while calls wait, held until it is typed again.
  let held: string | undefined;
  const setWaiting = (list: Interrupt[]) => {
    waiting = list;
    for (const id of decided.keys()) if (!list.some((ask) => ask.id === id)) decided.delete(id);
  };
  const refreshWaiting = async (reply?: AgentMessage) => {
    const pending = (agent as { pendingInterrupts?: (id: SessionId) => unknown }).pendingInterrupts;
    if (typeof pending === 'function') {
      try {
        const listed = await pending.call(agent, sessionId);
        if (Array.isArray(listed)) {
          setWaiting(listed as Interrupt[]);
          return;
        }
      } catch {
        // The reply's own list below is what is known.
      }
    }
    if (reply !== undefined) setWaiting(interruptsOf(reply));
  };
  const showWaiting = () => {
    if (waiting.length === 0) return;
    const lines = waiting
      .map((ask) => {
        const d = decided.get(ask.id);
        return `  ${describeInterrupt(ask)}${d === undefined ? '' : d.approve ? ' [approved]' : ' [declined]'}\n`;
      })
      .join('');
    const hint =
      waiting.length === 1
        ? '/approve [JSON], /decline [REASON]'
        : '/approve ID [JSON], /decline ID [REASON], or all';
    output.write(`[waiting for approval]\n${lines}${hint}\n`);
  };

  const ask = async (input: string | AgentMessage) => {
    const controller = new AbortController();
    current = controller;
    let printer = new ReplyPrinter((piece) => output.write(piece));
    let reasoning = '';
    let thought = '';
    let thinking = false;
    const colour = (output as { isTTY?: boolean }).isTTY === true;
    // Cleaned as a whole, as the reply is: an escape sequence split across chunks is still removed.
    const think = (text: string) => {
      reasoning += text;
      const clean = terminalText(reasoning);
      if (clean.length > thought.length) output.write(dim(clean.slice(thought.length), colour));
      thought = clean;
      thinking = true;
    };
    const show = (message: AgentMessage) => {
      // The interrupt reply's text ("Waiting for approval: ...") is said better by the list that follows it.
      if (message.type === INTERRUPT_TYPE) return;
      if (options.showReasoning) {
        if (message.reasoningDelta) return think(message.reasoningDelta);
        const whole = (message.extraInfo as { reasoning?: unknown } | null)?.reasoning;
        if (reasoning === '' && typeof whole === 'string' && whole !== '') think(whole);
      }
      const state = message.streamState;
      const calls = state === S.PLUGIN_END || state === S.CODE_END ? toolCallsOf(message.formatted) : null;
      if (calls !== null || state === S.PLUGIN_RETURN || state === S.CODE_RETURN) {
        // A round of tools: the calls the model made, then their results, one line each.
        if (printer.printed || thinking) output.write('\n');
        thinking = false;
        const lines =
          calls !== null
            ? calls.map(
                (call) =>
                  `[tool] ${terminalText(`${call.name} ${typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)}`)}`,
              )
            : (Array.isArray(message.content) ? message.content : [message.content]).map(
                (item) => `[result] ${resultText(item)}`,
              );
        output.write(`${lines.join('\n')}\n`);
        // The next model turn's text starts anew.
        printer = new ReplyPrinter((piece) => output.write(piece));
        return;
      }
      if (thinking && !(typeof message.content === 'string' && message.content === '')) {
        output.write('\n');
        thinking = false;
      }
      printer.show(message.content, message.delta, render);
    };
    try {
      const reply = await runAgent(agent, input, { sessionId, signal: controller.signal, onChunk: show });
      if (interruptsOf(reply).length > 0) {
        if (printer.printed) output.write('\n');
      } else {
        show(reply);
        if (printer.printed) output.write('\n');
      }
      await refreshWaiting(reply);
      showWaiting();
    } catch (error) {
      if (printer.printed) output.write('\n');
      if (controller.signal.aborted) errors.write('[stopped]\n');
      else errors.write(`[error] ${terminalText(messageOf(error))}\n`);
    } finally {
      current = undefined;
    }
  };

  const decide = async (decisions: Decision[]) => {
    for (const d of decisions) {
      decided.set(d.id, d);
      const call = waiting.find((ask) => ask.id === d.id);
      const what = call === undefined ? d.id : describeInterrupt(call);
      const reason = d.approve
        ? d.arguments === undefined
          ? ''
          : ` with ${terminalText(typeof d.arguments === 'string' ? d.arguments : JSON.stringify(d.arguments))}`
        : d.reason === undefined
          ? ''
          : `: ${terminalText(d.reason)}`;
      output.write(`${d.approve ? '[approved]' : '[declined]'} ${what}${reason}\n`);
    }
    const open = waiting.filter((ask) => !decided.has(ask.id));
    if (open.length > 0) {
      output.write(`[waiting] still to decide: ${open.map((ask) => ask.id).join(', ')}\n`);
      return;
    }
    const all = waiting.map((ask) => decided.get(ask.id)!);
    waiting = [];
    decided.clear();
    await ask(resumeWith(all));
  };

  const undecided = () => waiting.filter((ask) => !decided.has(ask.id));

  const command = async (line: string): Promise<boolean> => {
    const [name = '', ...rest] = line.split(/\s+/);
    const argument = rest.join(' ').trim();
    try {
      switch (name) {
        case '/pending':
          await refreshWaiting();
          if (waiting.length === 0) output.write('[pending] nothing waits for a decision\n');
          else showWaiting();
          return false;
        case '/approve': {
          await refreshWaiting();
          const { asks, rest: text } = chosen(undecided(), argument, '/approve');
          const args = editedArguments(text);
          if (args !== undefined && asks.length > 1)
            throw new Error('edited arguments go with one call: /approve ID JSON');
          await decide(
            asks.map((a) =>
              args === undefined ? { id: a.id, approve: true } : { id: a.id, approve: true, arguments: args },
            ),
          );
          return false;
        }
        case '/decline': {
          await refreshWaiting();
          const { asks, rest: reason } = chosen(undecided(), argument, '/decline');
          await decide(
            asks.map((a) =>
              reason === '' ? { id: a.id, approve: false } : { id: a.id, approve: false, reason },
            ),
          );
          return false;
        }
        case '/exit':
        case '/quit':
          return true;
        case '/help':
          output.write(`${CHAT_HELP}\n`);
          return false;
        case '/reset':
          if (typeof agent.reset !== 'function') throw new Error('this agent cannot be reset');
          await agent.reset(sessionId);
          setWaiting([]);
          output.write('[reset] the conversation is cleared\n');
          return false;
        case '/save': {
          if (argument === '') throw new Error('usage: /save FILE');
          const state = await agent.stateDict(sessionId, { format: 'lagent' });
          const file = await openRegular(argument, 'write');
          try {
            await file.writeFile(`${JSON.stringify(state, null, 2)}\n`);
          } finally {
            await file.close();
          }
          output.write(`[saved] ${countMessages(state)} message(s) to ${argument}\n`);
          return false;
        }
        case '/load': {
          if (argument === '') throw new Error('usage: /load FILE');
          if (typeof agent.loadStateDict !== 'function') throw new Error('this agent cannot load a state');
          const file = await openRegular(argument, 'read');
          let text: string;
          try {
            text = await file.readFile('utf8');
          } finally {
            await file.close();
          }
          let state: unknown;
          try {
            state = JSON.parse(text);
          } catch (error) {
            throw new Error(`${argument} is not JSON: ${messageOf(error)}`);
          }
          await agent.loadStateDict(state, sessionId);
          output.write(`[loaded] ${countMessages(state)} message(s) from ${argument}\n`);
          return false;
        }
        default:
          errors.write(`unknown command ${terminalText(name)} (/help lists them)\n`);
          return false;
      }
    } catch (error) {
      errors.write(`[error] ${terminalText(messageOf(error))}\n`);
      return false;
    }
  };

  const name = agent.name ? ` with ${terminalText(agent.name)}` : '';
  output.write(`lagent chat${name}: /help for commands, Ctrl-D to leave\n`);
  // Whether the cursor is after the prompt (so leaving needs a line break).
  let atPrompt = false;
  // Input that ends while a reply is running closes the interface; Node 24 throws on a prompt after that.
  let closed = false;
  rl.once('close', () => {
    closed = true;
  });
  const prompt = () => {
    if (closed) return;
    rl.prompt();
    atPrompt = true;
  };
  // Lines are read from now on: typed (or piped) while the waiting calls are looked up, none is lost.
  const lines = rl[Symbol.asyncIterator]();
  try {
    // A session that was left waiting (a stored one, or a durable agent's) says so at once.
    await refreshWaiting();
    showWaiting();
    prompt();
    for await (const raw of { [Symbol.asyncIterator]: () => lines }) {
      atPrompt = false;
      const line = raw.trim();
      if (line.startsWith('/')) {
        held = undefined;
        if (await command(line)) break;
      } else if (line !== '') {
        if (waiting.length > 0 && held !== line) {
          // Sent now, the message would decline what waits without a word: say so, and send it when repeated.
          held = line;
          const what =
            waiting.length === 1
              ? `${terminalText(waiting[0]!.toolCall?.name ?? waiting[0]!.id)} still waits`
              : `${waiting.length} calls still wait`;
          errors.write(
            `[waiting] ${what} for a decision: /approve or /decline; type the message again to send it and decline ${waiting.length === 1 ? 'it' : 'them'}\n`,
          );
        } else {
          if (waiting.length > 0) {
            for (const a of waiting)
              output.write(`[declined] ${describeInterrupt(a)}: you sent a new message\n`);
            waiting = [];
          }
          held = undefined;
          await ask(line);
        }
      }
      prompt();
    }
  } finally {
    if (atPrompt) output.write('\n');
    if (!terminal) process.off('SIGINT', interrupt);
    current?.abort();
    rl.close();
  }
}
