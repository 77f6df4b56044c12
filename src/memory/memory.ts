import {
  AgentMessage,
  type AgentMessageJSON,
  type MessageInput,
  toAgentMessage,
} from '../schema/agent-message';
import { ConfigurationError, ValidationError } from '../schema/errors';
import { keepShape } from '../utils/keep-shape';

/** Options of {@link Memory}. */
export interface MemoryOptions {
  /** Default number of most recent messages `getMemory()` returns; unset returns all. */
  recentN?: number | undefined;
}

/** Options of {@link Memory.getMemory}. */
export interface GetMemoryOptions {
  /**
   * Return only the last `recentN` messages (before filtering); defaults to the memory's own `recentN`.
   * `0` means none. (Lagent's `memory[-0:]` gives the whole list, and its `recent_n or self.recent_n`
   * cannot tell 0 from unset; here 0 is simply "the last zero messages".)
   */
  recentN?: number | undefined;
  /**
   * Keep only messages for which this returns true. `index` counts from the start of the window, as in
   * Lagent: with `recentN: 3` the three messages get 0, 1 and 2.
   */
  filter?: (message: AgentMessage, index: number) => boolean;
}

/**
 * `memory[RECENT]()` is `memory.getMemory()` for a read-only pass of the library's own (an aggregator
 * building a prompt): the stored array itself when that is what `getMemory()` would copy. The caller must
 * neither change nor keep it.
 */
export const RECENT: unique symbol = Symbol('lagent.memory.recent');

/** Histories up to this length are kept in exact-size arrays (see `Memory.#append`). */
const EXACT_UP_TO = 16;

/**
 * The history of every memory that has had no message yet (a session is created with its first turn,
 * so most are filled at once). Frozen: `#append` and `load` replace it rather than change it, `clear`
 * goes back to it, and `remove` and `delete` find nothing to take from it.
 */
const NO_MESSAGES = Object.freeze([]) as unknown as AgentMessage[];

/**
 * The message history of one session. Messages are stored as given (an agent's `call()` hands it copies);
 * `getMemory()` returns the stored messages themselves in a new array.
 *
 * @example
 * const memory = new Memory({ recentN: 10 });
 * memory.add('hello');
 * memory.getMemory()[0].sender; // 'user'
 */
export class Memory {
  readonly recentN: number | undefined;
  /** Shared while empty (see {@link NO_MESSAGES}): every method that adds replaces it first. */
  #messages: AgentMessage[] = NO_MESSAGES;

  constructor(options?: MemoryOptions) {
    const recentN = options?.recentN;
    if (recentN !== undefined && !(Number.isInteger(recentN) && recentN >= 0)) {
      throw new ConfigurationError({
        message: `Memory recentN must be a non-negative integer, got ${recentN}`,
      });
    }
    this.recentN = recentN;
  }

  /** Number of stored messages. */
  get length(): number {
    return this.#messages.length;
  }

  /**
   * The stored messages, most recent last: optionally only the last `recentN` (`0` gives none), then
   * optionally filtered, with indices counted within that window.
   */
  getMemory(options: GetMemoryOptions = {}): AgentMessage[] {
    const recentN = options.recentN ?? this.recentN;
    if (recentN !== undefined && !(Number.isInteger(recentN) && recentN >= 0)) {
      throw new ConfigurationError({
        message: `getMemory: recentN must be a non-negative integer, got ${recentN}`,
      });
    }
    const all = this.#messages;
    const start = recentN === undefined ? 0 : Math.max(0, all.length - recentN);
    const filter = options.filter;
    if (!filter) return all.slice(start);
    const out: AgentMessage[] = [];
    for (let i = start; i < all.length; i++) if (filter(all[i]!, i - start)) out.push(all[i]!);
    return out;
  }

  /** See {@link RECENT}. A subclass's own `getMemory` is honoured. */
  [RECENT](): readonly AgentMessage[] {
    if (this.recentN !== undefined || this.getMemory !== Memory.prototype.getMemory) return this.getMemory();
    return this.#messages;
  }

  /** Appends one message or several; strings become user messages, plain objects are validated. */
  add(input: MessageInput | readonly MessageInput[]): void {
    if (!Array.isArray(input)) {
      const item = input as MessageInput;
      this.#append(item instanceof AgentMessage ? item : toAgentMessage(item));
      return;
    }
    // Convert everything first so one invalid entry adds nothing.
    let converted: AgentMessage[] | undefined;
    for (let i = 0; i < input.length; i++) {
      const item = input[i] as MessageInput;
      if (!(item instanceof AgentMessage)) {
        converted ??= input.slice(0, i) as AgentMessage[];
        converted.push(toAgentMessage(item));
      } else converted?.push(item);
    }
    for (const message of converted ?? (input as readonly AgentMessage[])) this.#append(message);
  }

  /**
   * Appends one message. A short history is kept in an array of its exact size: a push onto a full array
   * reserves 16 more slots, 128 bytes that each of 10,000 two-message sessions would keep for nothing.
   */
  #append(message: AgentMessage): void {
    const stored = this.#messages;
    const length = stored.length;
    if (length >= EXACT_UP_TO) {
      stored.push(message);
      return;
    }
    const grown = new Array<AgentMessage>(length + 1);
    for (let i = 0; i < length; i++) grown[i] = stored[i]!;
    grown[length] = message;
    this.#messages = grown;
  }

  /**
   * Deletes the messages at the given indices (negative counts from the end). Several indices delete
   * exactly those messages, whatever their order.
   */
  delete(index: number | readonly number[]): void {
    const length = this.#messages.length;
    const indices = (typeof index === 'number' ? [index] : [...index]).map((i) => {
      const resolved = i < 0 ? length + i : i;
      if (!Number.isInteger(resolved) || resolved < 0 || resolved >= length) {
        throw new ConfigurationError({
          message: `Memory.delete: index ${i} is out of range for ${length} messages`,
        });
      }
      return resolved;
    });
    for (const i of [...new Set(indices)].sort((a, b) => b - a)) this.#messages.splice(i, 1);
  }

  /**
   * Removes exactly these messages (compared by identity; ones no longer here are skipped), leaving every
   * other message where it is. This is how a failed call takes back its own turn.
   */
  remove(messages: readonly AgentMessage[]): void {
    const stored = this.#messages;
    for (let i = messages.length - 1; i >= 0; i--) {
      const at = stored.lastIndexOf(messages[i]!);
      if (at === -1) continue;
      if (at === stored.length - 1) stored.pop();
      else stored.splice(at, 1);
    }
  }

  /** Removes every message. */
  clear(): void {
    this.#messages = NO_MESSAGES;
  }

  /**
   * Loads messages from their JSON form. Everything is validated before anything changes, so a bad
   * entry throws a {@link ValidationError} and leaves the memory as it was.
   */
  load(json: AgentMessageJSON | readonly AgentMessageJSON[], options: { overwrite?: boolean } = {}): void {
    const list = Array.isArray(json) ? json : [json];
    const messages = list.map((item, i) => {
      try {
        return AgentMessage.from(item);
      } catch (error) {
        if (error instanceof ValidationError) {
          throw new ValidationError({
            field: `${i}.${error.field}`,
            message: `entry ${i}: ${error.message}`,
            cause: error,
          });
        }
        throw error;
      }
    });
    this.#messages = (options.overwrite ?? true) ? messages : this.#messages.concat(messages);
  }

  /** The messages' JSON form (deep copies). */
  save(): AgentMessageJSON[] {
    return this.#messages.map((message) => message.toJSON());
  }
}

// One per session, all dropped when the agent is: see keepShape.
keepShape(new Memory());
