import { z } from 'zod';
import { deepClone } from '../utils/clone';
import { isPlainObject } from '../utils/is';
import { keepShape } from '../utils/keep-shape';
import { ActionReturn } from './action-return';
import { contentPartsToJSON, isContentParts } from './content-parts';
import { ValidationError } from './errors';
import { extraInfoFromLagent, extraInfoToLagent } from './lagent-extra-info';
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

/**
 * The JSON form of an {@link AgentMessage} in Python Lagent's shape (`AgentMessage.model_dump()`):
 * snake_case keys, and a tool parser's `formatted` with `tool_type` instead of `toolType`.
 */
export interface LagentMessageJSON<C = unknown, F = unknown> {
  content: C;
  sender: string;
  formatted: F | null;
  extra_info: unknown;
  type: string | null;
  receiver: string | null;
  stream_state: number;
}

/** Which JSON shape to write: lagent-ts's camelCase one (the default) or Python Lagent's snake_case one. */
export type MessageJSONFormat = 'lagent-ts' | 'lagent';

/** Options of {@link AgentMessage.toJSON}. */
export interface MessageJSONOptions {
  /** @default 'lagent-ts' */
  format?: MessageJSONFormat | undefined;
}

/**
 * How deeply arrays and objects may nest inside a message's `content`, `formatted` and `extraInfo` (a
 * field that is an array or object is level 1). Deeper values — or circular ones, when writing JSON — are a
 * {@link ValidationError} from `AgentMessage.from` and `toJSON` (a `StateDictError` from `loadStateDict`
 * and `stateDict`) instead of a stack overflow. 512 keeps a saved state dict readable by Python's `json`,
 * which stops at about 1,000 levels.
 */
export const MAX_MESSAGE_DEPTH = 512;

/** What the {@link AgentMessage} constructor takes; only `content` is required. */
export interface AgentMessageInit<C = unknown, F = unknown> {
  content: C;
  /** @default 'user' */
  sender?: string | undefined;
  formatted?: F | null | undefined;
  extraInfo?: unknown | undefined;
  type?: string | null | undefined;
  receiver?: string | null | undefined;
  /** @default AgentStatusCode.END */
  streamState?: number | undefined;
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
/** Keys of a tool parser's result (`formatted`) that Lagent writes in snake_case. */
const FORMATTED_SNAKE_KEYS: Record<string, string> = { tool_type: 'toolType' };
const FORMATTED_CAMEL_KEYS: Record<string, string> = { toolType: 'tool_type' };

/**
 * The one message type that flows between agents, tools and memory.
 *
 * @example
 * const message = new AgentMessage({ sender: 'user', content: 'What is 2 + 2?' });
 * const copy = message.clone();
 */
export class AgentMessage<C = unknown, F = unknown> {
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
  /**
   * On streamed chunks only: the reasoning text this chunk adds, while a reasoning model thinks (its `delta` is
   * then `''`). The final reply keeps the whole reasoning in `extraInfo.reasoning`. Never stored or serialised.
   *
   * @example
   * for await (const chunk of agent.call('hi')) if (chunk.reasoningDelta) dim(chunk.reasoningDelta);
   */
  declare reasoningDelta?: string;

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
    return messageOf(
      deepClone(this.content),
      this.sender,
      deepClone(this.formatted),
      deepClone(this.extraInfo),
      this.type,
      this.receiver,
      this.streamState,
    );
  }

  /**
   * A JSON-ready deep copy with camelCase keys, or with `{ format: 'lagent' }` in Python Lagent's shape
   * (see {@link toLagentJSON}). Throws a {@link ValidationError} when a field nests deeper than
   * {@link MAX_MESSAGE_DEPTH} or is circular.
   */
  toJSON(): AgentMessageJSON<C, F>;
  toJSON(options: MessageJSONOptions & { format: 'lagent' }): LagentMessageJSON<C, F>;
  toJSON(options?: MessageJSONOptions): AgentMessageJSON<C, F> | LagentMessageJSON<C, F>;
  toJSON(options?: MessageJSONOptions | string): AgentMessageJSON<C, F> | LagentMessageJSON<C, F> {
    checkNesting('AgentMessage.toJSON', this, false);
    const content = this.content;
    const json: AgentMessageJSON<C, F> = {
      // Image and file bytes are written as `data:` URLs, so a saved state keeps them.
      content: (Array.isArray(content) && isContentParts(content)
        ? toJSONValue(contentPartsToJSON(content))
        : toJSONValue(content)) as C,
      sender: this.sender,
      formatted: toJSONValue(this.formatted) as F | null,
      extraInfo: toJSONValue(this.extraInfo),
      type: this.type,
      receiver: this.receiver,
      streamState: this.streamState,
    };
    // JSON.stringify passes the property name as the argument.
    const format = typeof options === 'object' && options !== null ? options.format : undefined;
    return format === 'lagent' ? toLagentJSON(json) : json;
  }

  /**
   * Builds a message from its JSON form: camelCase, or Lagent's snake_case dumps (`extra_info`,
   * `stream_state`, `tool_type` in a tool parser's `formatted`, which comes back as `toolType`, and a loop's
   * `max_turn_reached` / `max_turn` in `extra_info`, which come back as `maxTurnReached` / `maxTurn`).
   * Content in an ActionReturn's JSON form (itself, or an item of a content list) comes back as an
   * {@link ActionReturn}. A message of another copy of lagent-ts (an agent module with its own copy, served by
   * a global `lagent`) is not an instance of this class: it is recognised by its fields and read through its
   * JSON. Throws a {@link ValidationError} naming the field when the input does not fit, gives one key in both
   * shapes, or nests deeper than {@link MAX_MESSAGE_DEPTH}.
   */
  static from(json: unknown): AgentMessage {
    if (json instanceof AgentMessage) return json.clone();
    if (!isPlainObject(json)) {
      if (isForeignMessage(json)) return AgentMessage.from(foreignJSON(json));
      throw new ValidationError({
        field: '(root)',
        message: `AgentMessage.from expects an object, got ${describe(json)}`,
      });
    }
    for (const [snake, camel] of Object.entries(SNAKE_KEYS)) {
      if (Object.hasOwn(json, snake) && Object.hasOwn(json, camel)) {
        throw new ValidationError({
          field: camel,
          message: `AgentMessage.from: both "${snake}" and "${camel}" are given; a message has one of them`,
        });
      }
    }
    // Null prototype: a "__proto__" key in the JSON stays a key (and is dropped as unknown), never a prototype.
    const input: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(json)) input[SNAKE_KEYS[key] ?? key] = json[key];
    if (!('content' in input)) {
      throw new ValidationError({ field: 'content', message: 'AgentMessage.from: "content" is required' });
    }
    checkNesting('AgentMessage.from', input, true);
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
      content: reviveContent(deepClone(data.content)),
      sender: data.sender,
      formatted: camelFormatted(deepClone(data.formatted)),
      extraInfo: Object.hasOwn(json, 'extra_info')
        ? extraInfoFromLagent(deepClone(data.extraInfo))
        : deepClone(data.extraInfo),
      type: data.type,
      receiver: data.receiver,
      streamState: data.streamState,
    });
  }
}

/** The fields every AgentMessage has, of whichever copy of lagent-ts. */
const MESSAGE_FIELDS = ['content', 'sender', 'formatted', 'extraInfo', 'type', 'receiver', 'streamState'];

/**
 * Whether `value` is an AgentMessage of another copy of lagent-ts (or of a class shaped like one): an object of
 * a class, not this one, with every field of a message as its own, and a string `sender` and number `streamState`.
 */
function isForeignMessage(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof AgentMessage) {
    return false;
  }
  for (const field of MESSAGE_FIELDS) if (!Object.hasOwn(value, field)) return false;
  const { sender, streamState } = value as { sender: unknown; streamState: unknown };
  return typeof sender === 'string' && typeof streamState === 'number';
}

/** A message of another copy in its JSON form: its own `toJSON()` (content in JSON), else its fields. */
function foreignJSON(message: Record<string, unknown>): Record<string, unknown> {
  const toJSON = message.toJSON;
  if (typeof toJSON === 'function') {
    const json: unknown = toJSON.call(message);
    if (isPlainObject(json)) return json;
  }
  const fields: Record<string, unknown> = {};
  for (const field of MESSAGE_FIELDS) fields[field] = message[field];
  return fields;
}

/**
 * `value` as a message of this copy of lagent-ts: the message itself, a message of another copy read by its
 * fields (see {@link AgentMessage.from}), or undefined for anything else. For hosts that take what an agent
 * of any copy returns (servers, workers).
 */
export function asOwnMessage(value: unknown): AgentMessage | undefined {
  if (value instanceof AgentMessage) return value;
  return isForeignMessage(value) ? AgentMessage.from(foreignJSON(value)) : undefined;
}

/**
 * Anything `call()` and `Memory.add()` accept as a message: an {@link AgentMessage}, a string (a user
 * message) or a plain object in AgentMessage's JSON shape.
 */
export type MessageInput = AgentMessage | string | AgentMessageInit | AgentMessageJSON;

/** Turns one input into a fresh AgentMessage that the caller's object does not share. */
export function toAgentMessage(input: MessageInput): AgentMessage {
  if (typeof input === 'string') return messageOf(input, 'user', null, null, null, null, AgentStatusCode.END);
  if (input instanceof AgentMessage) return input.clone();
  return AgentMessage.from(input);
}

/** What {@link messageOf} constructs from: every field at its default. */
const BLANK: AgentMessageInit<unknown, unknown> = Object.freeze({ content: undefined });

/**
 * A message from its fields, without an init object: the copies a call makes (its inputs, its reply, the
 * caller's copy of it) then allocate the message alone.
 */
export function messageOf<C, F>(
  content: C,
  sender: string,
  formatted: F | null,
  extraInfo: unknown,
  type: string | null,
  receiver: string | null,
  streamState: number,
): AgentMessage<C, F> {
  const message = new AgentMessage<C, F>(BLANK as AgentMessageInit<C, F>);
  message.content = content;
  message.sender = sender;
  message.formatted = formatted;
  message.extraInfo = extraInfo;
  message.type = type;
  message.receiver = receiver;
  message.streamState = streamState;
  return message;
}

// Every call makes messages and a reset session drops them: see keepShape.
keepShape(messageOf('', 'user', null, null, null, null, AgentStatusCode.END));

/**
 * A message in stream state `S` (an `AgentStatusCode`), with content `C` and `formatted` `F`. The chunk
 * types of the streaming agents are unions of these, so checking a chunk's `streamState` narrows its
 * `content` and `formatted`.
 *
 * @example
 * if (chunk.streamState === AgentStatusCode.PLUGIN_RETURN) chunk.content; // ActionReturn[]
 */
export type MessageInState<S extends number, C, F> = AgentMessage<C, F> & { streamState: S; formatted: F };

/**
 * A message's camelCase JSON form in Python Lagent's shape: `extra_info` and `stream_state`, a tool
 * parser's result in `formatted` with `tool_type` (an ActionReturn's JSON form is already Lagent's dump),
 * and the library's own `extraInfo` keys in snake_case (a loop's `max_turn_reached` / `max_turn`; keys you
 * set are written as you set them).
 */
export function toLagentJSON<C, F>(json: AgentMessageJSON<C, F>): LagentMessageJSON<C, F> {
  return {
    content: json.content,
    sender: json.sender,
    formatted: renameFormatted(json.formatted, FORMATTED_CAMEL_KEYS, 'toJSON') as F | null,
    extra_info: extraInfoToLagent(json.extraInfo ?? null),
    type: json.type ?? null,
    receiver: json.receiver ?? null,
    stream_state: json.streamState,
  };
}

/** A tool parser's result (an object with `thought` and `status`) with its keys renamed; anything else as is. */
function renameFormatted(formatted: unknown, names: Record<string, string>, where: string): unknown {
  if (
    !isPlainObject(formatted) ||
    !Object.hasOwn(formatted, 'thought') ||
    !Object.hasOwn(formatted, 'status')
  ) {
    return formatted;
  }
  const keys = Object.keys(formatted);
  if (!keys.some((key) => Object.hasOwn(names, key))) return formatted;
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const renamed = Object.hasOwn(names, key) ? names[key]! : key;
    if (renamed !== key && Object.hasOwn(formatted, renamed)) {
      throw new ValidationError({
        field: `formatted.${key}`,
        message: `AgentMessage.${where}: "formatted" has both "${key}" and "${renamed}"; it has one of them`,
      });
    }
    // A "__proto__" key (from JSON.parse) stays a data property instead of setting the prototype.
    Object.defineProperty(out, renamed, {
      value: formatted[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function camelFormatted(formatted: unknown): unknown {
  return renameFormatted(formatted, FORMATTED_SNAKE_KEYS, 'from');
}

/** Content in an ActionReturn's JSON form, or a list holding some, with those back as ActionReturns. */
function reviveContent(content: unknown): unknown {
  if (ActionReturn.isJSON(content)) return ActionReturn.from(content);
  if (Array.isArray(content)) {
    for (let i = 0; i < content.length; i++) {
      if (ActionReturn.isJSON(content[i])) content[i] = ActionReturn.from(content[i]);
    }
  }
  return content;
}

/** Throws a ValidationError when `content`, `formatted` or `extraInfo` nests too deeply (or, unless allowed, in a circle). */
function checkNesting(
  where: string,
  fields: { content?: unknown; formatted?: unknown; extraInfo?: unknown },
  allowCycles: boolean,
): void {
  for (const field of ['content', 'formatted', 'extraInfo'] as const) {
    const problem = nestingProblem(fields[field], MAX_MESSAGE_DEPTH, allowCycles);
    if (problem) {
      throw new ValidationError({
        field,
        message:
          problem === 'deep'
            ? `${where}: "${field}" nests arrays or objects more than ${MAX_MESSAGE_DEPTH} levels deep`
            : `${where}: "${field}" is circular, so it has no JSON form`,
      });
    }
  }
}

interface NestingFrame {
  node: object;
  keys: string[] | null;
  next: number;
  height: number;
}

/**
 * Whether a value's arrays and objects nest more than `limit` levels deep, or (unless `allowCycles`) contain
 * a cycle. Iterative, and each object is visited once, so neither depth nor shared references can blow up.
 */
function nestingProblem(value: unknown, limit: number, allowCycles: boolean): 'deep' | 'circular' | null {
  if (value === null || typeof value !== 'object') return null;
  const heights = new Map<object, number>();
  const onPath = new Set<object>();
  const frame = (node: object): NestingFrame => {
    onPath.add(node);
    return { node, keys: Array.isArray(node) ? null : Object.keys(node), next: 0, height: 1 };
  };
  const stack: NestingFrame[] = [frame(value)];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const node = top.node as Record<string, unknown>;
    const size = top.keys === null ? (node as unknown as unknown[]).length : top.keys.length;
    if (top.next < size) {
      const index = top.next++;
      const child = top.keys === null ? (node as unknown as unknown[])[index] : node[top.keys[index]!];
      if (child === null || typeof child !== 'object') continue;
      const known = heights.get(child);
      if (known !== undefined) {
        if (stack.length + known > limit) return 'deep';
        if (known + 1 > top.height) top.height = known + 1;
        continue;
      }
      if (onPath.has(child)) {
        if (allowCycles) continue;
        return 'circular';
      }
      if (stack.length + 1 > limit) return 'deep';
      stack.push(frame(child));
      continue;
    }
    stack.pop();
    onPath.delete(top.node);
    heights.set(top.node, top.height);
    const parent = stack[stack.length - 1];
    if (parent && top.height + 1 > parent.height) parent.height = top.height + 1;
  }
  return null;
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
