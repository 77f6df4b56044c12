import { z } from 'zod';
import { deepClone } from '../utils/clone';
import { isPlainObject } from '../utils/is';
import { ValidationError } from './errors';
import { AgentStatusCode } from './status';

/** The JSON form of an {@link AgentMessage}: camelCase keys, all seven fields. */
export interface AgentMessageJSON<C = unknown, F = unknown> {
  content: C;
  sender: string;
  formatted: F | null;
  extraInfo: unknown;
  type: string | null;
  receiver: string | null;
  streamState: number;
}

/** What the {@link AgentMessage} constructor takes; only `content` is required. */
export interface AgentMessageInit<C = unknown, F = unknown> {
  content: C;
  /** @default 'user' */
  sender?: string;
  formatted?: F | null;
  extraInfo?: unknown;
  type?: string | null;
  receiver?: string | null;
  /** @default AgentStatusCode.END */
  streamState?: number;
}

const nullableString = z.string().nullable().optional();
const messageShape = z.object({
  content: z.unknown(),
  sender: z.string().optional(),
  formatted: z.unknown().optional(),
  extraInfo: z.unknown().optional(),
  type: nullableString,
  receiver: nullableString,
  streamState: z.number().int().optional(),
});

const SNAKE_KEYS: Record<string, string> = { extra_info: 'extraInfo', stream_state: 'streamState' };

/**
 * The one message type that flows between agents, tools and memory.
 *
 * @example
 * const message = new AgentMessage({ sender: 'user', content: 'What is 2 + 2?' });
 * const copy = message.clone();
 */
export class AgentMessage<C = any, F = any> {
  content: C;
  sender: string;
  formatted: F | null;
  extraInfo: unknown;
  type: string | null;
  receiver: string | null;
  streamState: number;
  /**
   * On streamed chunks only: the text this chunk adds to the previous one of the same stream (its
   * `content` is cumulative), so printing tokens needs no slicing. `''` on the final message unless it
   * adds text; never stored or serialised.
   *
   * @example
   * for await (const chunk of agent.call('hi')) process.stdout.write(chunk.delta ?? '');
   */
  declare delta?: string;

  constructor(init: AgentMessageInit<C, F>) {
    this.content = init.content;
    this.sender = init.sender ?? 'user';
    this.formatted = init.formatted ?? null;
    this.extraInfo = init.extraInfo ?? null;
    this.type = init.type ?? null;
    this.receiver = init.receiver ?? null;
    this.streamState = init.streamState ?? AgentStatusCode.END;
  }

  /** A deep copy: changing the copy never changes this message. */
  clone(): AgentMessage<C, F> {
    return new AgentMessage<C, F>({
      content: deepClone(this.content),
      sender: this.sender,
      formatted: deepClone(this.formatted),
      extraInfo: deepClone(this.extraInfo),
      type: this.type,
      receiver: this.receiver,
      streamState: this.streamState,
    });
  }

  /** A JSON-ready deep copy with camelCase keys. */
  toJSON(): AgentMessageJSON<C, F> {
    return {
      content: toJSONValue(this.content) as C,
      sender: this.sender,
      formatted: toJSONValue(this.formatted) as F | null,
      extraInfo: toJSONValue(this.extraInfo),
      type: this.type,
      receiver: this.receiver,
      streamState: this.streamState,
    };
  }

  /**
   * Builds a message from its JSON form (camelCase, or Lagent's snake_case dumps with `extra_info` and
   * `stream_state`). Throws a {@link ValidationError} naming the field when the input does not fit.
   */
  static from(json: unknown): AgentMessage {
    if (json instanceof AgentMessage) return json.clone();
    if (!isPlainObject(json)) {
      throw new ValidationError({
        field: '(root)',
        message: `AgentMessage.from expects an object, got ${describe(json)}`,
      });
    }
    // Null prototype: a "__proto__" key in the JSON stays a key (and is dropped as unknown), never a prototype.
    const input: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(json)) input[SNAKE_KEYS[key] ?? key] = json[key];
    if (!('content' in input)) {
      throw new ValidationError({ field: 'content', message: 'AgentMessage.from: "content" is required' });
    }
    const parsed = messageShape.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || '(root)';
      throw new ValidationError({
        field,
        message: `AgentMessage.from: "${field}" is invalid: ${issue.message} (got ${describe(input[String(issue.path[0])])})`,
        cause: parsed.error,
      });
    }
    const data = parsed.data;
    return new AgentMessage({
      content: deepClone(data.content),
      sender: data.sender,
      formatted: deepClone(data.formatted),
      extraInfo: deepClone(data.extraInfo),
      type: data.type,
      receiver: data.receiver,
      streamState: data.streamState,
    });
  }
}

/**
 * Anything `call()` and `Memory.add()` accept as a message: an {@link AgentMessage}, a string (a user
 * message) or a plain object in AgentMessage's JSON shape.
 */
export type MessageInput = AgentMessage | string | AgentMessageInit | AgentMessageJSON;

/** Turns one input into a fresh AgentMessage that the caller's object does not share. */
export function toAgentMessage(input: MessageInput): AgentMessage {
  if (typeof input === 'string') return new AgentMessage({ content: input });
  if (input instanceof AgentMessage) return input.clone();
  return AgentMessage.from(input);
}

function toJSONValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value ?? null;
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return json.call(value);
  return deepClone(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string')
    return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value;
}
