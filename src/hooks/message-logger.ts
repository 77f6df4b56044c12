import { ActionReturn } from '../schema/action-return';
import type { AgentMessage } from '../schema/agent-message';
import type { SessionId } from '../schema/session';
import { toText } from '../utils/text';
import type { HookAgent } from './hook';
import { Hook, type HookExecutor } from './hook';

/** Where {@link MessageLogger} writes: `process.stdout`, a file stream, or anything with `write(string)`. */
export interface WritableLike {
  write(chunk: string): unknown;
  isTTY?: boolean | undefined;
}

/** Options of {@link MessageLogger}. */
export interface MessageLoggerOptions {
  /** @default process.stderr */
  stream?: WritableLike | undefined;
  /** Colour each sender; defaults to whether `stream` is a TTY (and `NO_COLOR` is unset). */
  colors?: boolean | undefined;
  /** Shown before each line, e.g. the logger's owner. */
  name?: string | undefined;
}

const PALETTE = [36, 33, 35, 32, 34, 31, 96, 93, 95, 92, 94, 91];

function colourOf(sender: string): number {
  let hash = 0;
  for (let i = 0; i < sender.length; i++) hash = (hash * 31 + sender.charCodeAt(i)) >>> 0;
  return PALETTE[hash % PALETTE.length]!;
}

/** Content as log text: a tool result as the model sees it, other values as indented JSON; never throws. */
function text(content: unknown): string {
  return content instanceof ActionReturn ? content.toText() : toText(content, { json: 'pretty' });
}

/**
 * Logs every message that passes an agent or executor it is registered on, one block per message headed
 * by session and sender, each sender in its own colour.
 *
 * @example
 * const agent = new Agent({ llm, hooks: [new MessageLogger({ stream: process.stdout })] });
 */
export class MessageLogger extends Hook {
  readonly #stream: WritableLike;
  readonly #colors: boolean;
  readonly #name: string | undefined;

  constructor(options: MessageLoggerOptions = {}) {
    super();
    this.#stream = options.stream ?? process.stderr;
    this.#colors = options.colors ?? (Boolean(this.#stream.isTTY) && !process.env.NO_COLOR);
    this.#name = options.name;
  }

  override beforeAgent(_agent: HookAgent, messages: AgentMessage[], sessionId: SessionId): void {
    for (const message of messages) this.#log(message, sessionId);
  }

  override afterAgent(_agent: HookAgent, message: AgentMessage, sessionId: SessionId): void {
    this.#log(message, sessionId);
  }

  override beforeAction(_executor: HookExecutor, message: AgentMessage, sessionId: SessionId): void {
    this.#log(message, sessionId);
  }

  override afterAction(_executor: HookExecutor, message: AgentMessage, sessionId: SessionId): void {
    this.#log(message, sessionId);
  }

  #log(message: AgentMessage, sessionId: SessionId): void {
    const target = message.receiver ? ` → ${message.receiver}` : '';
    const prefix = this.#name ? `${this.#name} ` : '';
    let header = `${prefix}[session ${sessionId}] ${message.sender}${target}:`;
    if (this.#colors) header = `\x1b[1;${colourOf(message.sender)}m${header}\x1b[0m`;
    this.#stream.write(`${header}\n${text(message.content)}\n\n`);
  }
}
