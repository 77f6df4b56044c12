import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { AgentMessage } from '../schema/agent-message';
import type { SessionId } from '../schema/session';
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
}

export const CHAT_HELP = `Commands:
  /reset        clear the conversation (the agent's memory of this session)
  /save FILE    write the agent's state (its state dict, Lagent's JSON shape) to FILE
  /load FILE    restore a state written by /save
  /help         this list
  /exit         leave (or Ctrl-D, or Ctrl-C at an empty prompt)
Ctrl-C while the agent answers stops the answer; the conversation stays as it was before the question.`;

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

/**
 * The `lagent chat` REPL: each line is a question to the agent, its reply streams as it arrives. Slash
 * commands reset, save and load the session's state. Resolves when the user leaves.
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

  const ask = async (text: string) => {
    const controller = new AbortController();
    current = controller;
    const printer = new ReplyPrinter((piece) => output.write(piece));
    const show = (message: AgentMessage) => printer.show(message.content, message.delta, render);
    try {
      show(await runAgent(agent, text, { sessionId, signal: controller.signal, onChunk: show }));
      output.write('\n');
    } catch (error) {
      if (printer.printed) output.write('\n');
      if (controller.signal.aborted) errors.write('[stopped]\n');
      else errors.write(`[error] ${terminalText(messageOf(error))}\n`);
    } finally {
      current = undefined;
    }
  };

  const command = async (line: string): Promise<boolean> => {
    const [name = '', ...rest] = line.split(/\s+/);
    const argument = rest.join(' ').trim();
    try {
      switch (name) {
        case '/exit':
        case '/quit':
          return true;
        case '/help':
          output.write(`${CHAT_HELP}\n`);
          return false;
        case '/reset':
          if (typeof agent.reset !== 'function') throw new Error('this agent cannot be reset');
          await agent.reset(sessionId);
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
  try {
    prompt();
    for await (const raw of rl) {
      atPrompt = false;
      const line = raw.trim();
      if (line.startsWith('/')) {
        if (await command(line)) break;
      } else if (line !== '') {
        await ask(line);
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
