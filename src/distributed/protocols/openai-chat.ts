import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { checkClientTools } from '../../agents/interceptors/approvals/client-tools';
import { pendingInterrupts } from '../../agents/pending-interrupts';
import { toAPIToolName, toolsAsJSON } from '../../llms/tool-calls';
import type { ToolSpec } from '../../llms/types';
import { AgentMessage } from '../../schema/agent-message';
import type { OpenAITool } from '../../schema/chat-message';
import type { ContentPart } from '../../schema/content-parts';
import { type Decision, type Interrupt, interruptsOf, resumeWith } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { checkSessionId } from '../http/protocol';
import {
  type Answer,
  answerOf,
  badInput,
  callOptions,
  checkDecisions,
  checkHistory,
  EventStream,
  type HistoryEntry,
  isCallersMistake,
  ProtocolRequestError,
  remoteSource,
  SSE_HEADERS,
} from './request';
import { CLIENT_GONE, type ProtocolHost, type RunObserver, runCall } from './run';

/*
 * OpenAI's chat completions, so any OpenAI client (the `openai` SDKs, Open WebUI, LibreChat, ...) can talk to
 * the agent: `POST /v1/chat/completions` (streaming or not) and `GET /v1/models`. The model id is the agent's
 * name. With a session (the `user` field, or an `X-Session-Id` header) the session's memory is the truth and
 * only the newest message is taken; without one, the conversation is taken as given, in a session of its own
 * that is cleared after the call, for clients that resend the whole history.
 *
 * A request's `tools` are the client's: those named as a tool of the agent's tree let a call that waits for
 * approval of that tool be answered as tool calls; the others are the call's client tools (`clientTools`),
 * offered to its models, whose calls pause the call and are answered as tool calls for the client to run. The
 * next request on the session answers them with `tool` messages (an approval's `approve` / `decline: why`, a
 * client tool's output), which resume the call.
 */

/** Where the routes go. */
export interface OpenAIChatOptions {
  /** The prefix of `/chat/completions` and `/models`. @default '/v1' */
  prefix?: string | undefined;
}

/** Keys of a chat completion request that map onto call options (through the server's caller policy). */
const GENERATION_KEYS: Readonly<Record<string, string>> = {
  max_tokens: 'max_new_tokens',
  max_completion_tokens: 'max_new_tokens',
  temperature: 'temperature',
  top_p: 'top_p',
  stop: 'stop_words',
};
/** Keys of the protocol itself, read here and never call options. */
const PROTOCOL_KEYS = new Set(['model', 'messages', 'stream', 'stream_options', 'user', 'tools']);

const JSON_TYPE = 'application/json; charset=utf-8';

interface OpenAIMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
}

/** A `tool` message answering a call that waits: a decision once the call's kind is known. */
interface ToolAnswer {
  message: OpenAIMessage;
  index: number;
}

interface ReadRequest {
  sessionId: SessionId;
  /** No session was named: the conversation is taken as given and forgotten after the call. */
  stateless: boolean;
  input: AgentMessage[];
  /** The tool messages of the request, newest last (see {@link decisionsOf}). */
  answers: ToolAnswer[];
  history: HistoryEntry[];
  stream: boolean;
  includeUsage: boolean;
  /** Names of the tools the client offered (an interrupt is answered as tool calls when it has them all). */
  tools: Set<string>;
  /** The request's tools that are not the agent's: the call's client tools. */
  clientTools: readonly OpenAITool[] | undefined;
  options: Record<string, unknown>;
}

/** Registers `POST {prefix}/chat/completions`, `GET {prefix}/models` and `GET {prefix}/models/:id`. */
export function registerOpenAIChat(
  app: FastifyInstance,
  host: ProtocolHost,
  options: OpenAIChatOptions = {},
): void {
  const prefix = options.prefix ?? '/v1';
  const created = Math.floor(Date.now() / 1000);
  const model = () => ({ id: modelId(host), object: 'model', created, owned_by: 'lagent-ts' });
  app.get(`${prefix}/models`, (_request, reply) => {
    reply.type(JSON_TYPE).send(JSON.stringify({ object: 'list', data: [model()] }));
  });
  app.get(`${prefix}/models/:id`, (request, reply) => {
    const { id } = request.params as { id: string };
    if (id !== modelId(host)) {
      sendError(reply, modelNotFound(host, id));
      return;
    }
    reply.type(JSON_TYPE).send(JSON.stringify(model()));
  });
  app.post(`${prefix}/chat/completions`, (request, reply) => completion(host, request, reply));
}

function modelId(host: ProtocolHost): string {
  return host.agent.name ?? 'agent';
}

function modelNotFound(host: ProtocolHost, id: string): Answer {
  return {
    status: 404,
    code: 'model_not_found',
    message: `the model ${JSON.stringify(id)} does not exist; this server serves ${JSON.stringify(modelId(host))}`,
  };
}

async function completion(host: ProtocolHost, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  let read: ReadRequest;
  let decisions: Decision[] = [];
  try {
    read = readRequest(host, request, reply);
    if (!read.stateless) {
      await checkHistory(host, read.sessionId, read.history);
      decisions = await decisionsOf(host, read);
      await checkDecisions(host, read.sessionId, decisions);
    }
  } catch (error) {
    sendError(reply, answerOf(host, error));
    return;
  }
  const controller = new AbortController();
  const end = host.begin(controller, read.sessionId);
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const input = decisions.length > 0 ? [resumeWith(decisions)] : read.input;
  try {
    if (read.stream) await streamed(host, read, reply, controller, { id, created, input });
    else await whole(host, read, reply, controller, { id, created, input });
  } finally {
    end();
    if (read.stateless) forget(host, read.sessionId);
  }
}

async function whole(
  host: ProtocolHost,
  read: ReadRequest,
  reply: FastifyReply,
  controller: AbortController,
  call: { id: string; created: number; input: AgentMessage[] },
): Promise<void> {
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error(CLIENT_GONE));
  };
  reply.raw.once('close', onClose);
  try {
    const message = await runCall(host, {
      sessionId: read.sessionId,
      input: call.input,
      options: read.options,
      signal: controller.signal,
    });
    const { content, toolCalls, finish } = answer(message, read);
    const reasoning = reasoningOf(message);
    const body: Record<string, unknown> = {
      id: call.id,
      object: 'chat.completion',
      created: call.created,
      model: modelId(host),
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content,
            refusal: null,
            ...(toolCalls === undefined ? {} : { tool_calls: toolCalls }),
            ...(reasoning === undefined ? {} : { reasoning_content: reasoning }),
          },
          logprobs: null,
          finish_reason: finish,
        },
      ],
    };
    const usage = usageOf(message);
    if (usage !== undefined) body.usage = usage;
    reply.type(JSON_TYPE).send(JSON.stringify(body));
  } catch (error) {
    if (controller.signal.aborted) {
      // The client is gone: nobody to answer, and its connection goes.
      reply.hijack();
      reply.raw.destroy();
    } else {
      if (!isCallersMistake(error)) host.onError(error, { route: 'openai', sessionId: read.sessionId });
      sendError(reply, answerOf(host, error));
    }
  } finally {
    reply.raw.off('close', onClose);
  }
}

async function streamed(
  host: ProtocolHost,
  read: ReadRequest,
  reply: FastifyReply,
  controller: AbortController,
  call: { id: string; created: number; input: AgentMessage[] },
): Promise<void> {
  const out = new EventStream(reply, controller, SSE_HEADERS);
  const model = modelId(host);
  const head = `{"id":${JSON.stringify(call.id)},"object":"chat.completion.chunk","created":${call.created},"model":${JSON.stringify(model)},"system_fingerprint":null,"choices":[{"index":0,"delta":`;
  let opened = false;
  const send = (delta: string, finish: string | null = null) => {
    if (!opened) {
      opened = true;
      out.write(`data: ${head}{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`);
    }
    return out.write(
      `data: ${head}${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`,
    );
  };
  let streamedText = false;
  const observer: RunObserver = {
    text(delta) {
      streamedText = true;
      send(`{"content":${JSON.stringify(delta)}}`);
    },
    reasoning(delta) {
      send(`{"reasoning_content":${JSON.stringify(delta)}}`);
    },
    // What the agent tree does rides on the chunks as a field OpenAI's clients do not know (and ignore).
    toolsStarted(path, calls) {
      send(JSON.stringify({ agent_event: { kind: 'toolStart', path, toolCalls: calls } }));
    },
    toolsEnded(path, calls, results) {
      send(JSON.stringify({ agent_event: { kind: 'toolEnd', path, toolCalls: calls, results } }));
    },
    agentStarted(path, name) {
      send(JSON.stringify({ agent_event: { kind: 'agentStart', path, name } }));
    },
    agentEnded(path, outcome) {
      send(JSON.stringify({ agent_event: { kind: 'agentEnd', path, outcome } }));
    },
  };
  try {
    const message = await runCall(host, {
      sessionId: read.sessionId,
      input: call.input,
      options: read.options,
      signal: controller.signal,
      observer,
      drained: () => out.drained(),
    });
    if (out.gone) return;
    const { content, toolCalls, finish } = answer(message, read);
    if (toolCalls !== undefined) {
      send(
        JSON.stringify({
          tool_calls: toolCalls.map((toolCall, index) => ({ index, ...toolCall })),
        }),
      );
    } else if (!streamedText && content !== null && content !== '') {
      const reasoning = reasoningOf(message);
      if (reasoning !== undefined) send(`{"reasoning_content":${JSON.stringify(reasoning)}}`);
      send(`{"content":${JSON.stringify(content)}}`);
    } else if (interruptsOf(message).length > 0 && content !== null) {
      // The text streamed before the pause was the model's; what waits is said after it.
      send(`{"content":${JSON.stringify(`${streamedText ? '\n\n' : ''}${content}`)}}`);
    }
    send('{}', finish);
    const usage = usageOf(message);
    if (read.includeUsage) {
      out.write(
        `data: ${JSON.stringify({ id: call.id, object: 'chat.completion.chunk', created: call.created, model, choices: [], usage: usage ?? null })}\n\n`,
      );
    }
    out.write('data: [DONE]\n\n');
  } catch (error) {
    if (out.gone) return;
    if (!isCallersMistake(error)) host.onError(error, { route: 'openai', sessionId: read.sessionId });
    const failure = answerOf(host, error);
    if (!out.started) {
      sendError(reply, failure);
      return;
    }
    out.write(`data: ${JSON.stringify(errorBody(failure))}\n\n`);
  } finally {
    out.end();
  }
}

/** The assistant message of a reply: its text, or the calls that wait for approval. */
function answer(
  message: AgentMessage,
  read: ReadRequest,
): {
  content: string | null;
  toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] | undefined;
  finish: string;
} {
  const interrupts = interruptsOf(message);
  if (interrupts.length === 0) {
    const info = message.extraInfo as { maxTurnReached?: unknown } | null;
    return {
      content: textOf(message.content),
      toolCalls: undefined,
      finish: info !== null && typeof info === 'object' && info.maxTurnReached === true ? 'length' : 'stop',
    };
  }
  if (!read.stateless && interrupts.every((ask) => read.tools.has(ask.toolCall.name))) {
    return { content: null, toolCalls: interrupts.map(asToolCall), finish: 'tool_calls' };
  }
  return { content: waitingText(interrupts, read.stateless), toolCalls: undefined, finish: 'stop' };
}

function asToolCall(ask: Interrupt): {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
} {
  const args = ask.toolCall.arguments;
  return {
    id: ask.id,
    type: 'function',
    function: { name: ask.toolCall.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
  };
}

/** What a paused call says when the client cannot answer it as tool calls. */
function waitingText(interrupts: readonly Interrupt[], stateless: boolean): string {
  const describe = (ask: Interrupt) => {
    const args = ask.toolCall.arguments;
    return `${ask.toolCall.name}(${typeof args === 'string' ? args : JSON.stringify(args)}) [${ask.id}]`;
  };
  const approvals = interrupts.filter((ask) => ask.kind !== 'client-tool').map(describe);
  const yours = interrupts.filter((ask) => ask.kind === 'client-tool').map(describe);
  if (stateless) {
    return `The agent wants to run ${approvals.join(', ')}, which needs approval. Approvals need a session: send the "user" field or an X-Session-Id header.`;
  }
  const parts: string[] = [];
  if (approvals.length > 0)
    parts.push(
      `Waiting for approval: ${approvals.join(', ')}. Answer each call with a tool message ("approve", or "decline: why")`,
    );
  if (yours.length > 0)
    parts.push(
      `Waiting for your tools: ${yours.join(', ')}. Answer each call with a tool message holding its output`,
    );
  return `${parts.join('. ')}, or write a new message to decline them.`;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  return JSON.stringify(content);
}

function reasoningOf(message: AgentMessage): string | undefined {
  const reasoning = (message.extraInfo as { reasoning?: unknown } | null)?.reasoning;
  return typeof reasoning === 'string' && reasoning !== '' ? reasoning : undefined;
}

function usageOf(message: AgentMessage): Record<string, number> | undefined {
  const usage = (message.extraInfo as { usage?: Record<string, unknown> } | null)?.usage;
  if (usage === undefined || usage === null || typeof usage.promptTokens !== 'number') return undefined;
  const prompt = usage.promptTokens;
  const completion = typeof usage.completionTokens === 'number' ? usage.completionTokens : 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Reads and checks the body; sets the headers that say what was ignored. */
function readRequest(host: ProtocolHost, request: FastifyRequest, reply: FastifyReply): ReadRequest {
  const body = request.body;
  if (!isPlainObject(body)) throw badInput('(root)', 'the body must be a JSON object');
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== 'string') throw badInput('model', '"model" must be a string');
    if (body.model !== modelId(host)) {
      const missing = modelNotFound(host, body.model);
      throw new ProtocolRequestError({ ...missing, field: 'model' });
    }
  }
  const header = request.headers['x-session-id'];
  const named = Array.isArray(header) ? header.join(',') : header;
  const user = body.user;
  if (user !== undefined && user !== null && typeof user !== 'string')
    throw badInput('user', '"user" must be a string');
  if (named !== undefined && typeof user === 'string' && user !== named) {
    throw badInput('user', 'the "user" field and the X-Session-Id header name different sessions; give one');
  }
  const session = named ?? (typeof user === 'string' && user !== '' ? user : undefined);
  if (session !== undefined) {
    if (session === '') throw badInput('X-Session-Id', 'the session id is empty');
    checkSessionId(session);
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw badInput('messages', '"messages" must be a non-empty array');
  const checked = messages.map((message, index) => checkMessage(message, index));
  const offered = offeredTools(body.tools);
  const tools = new Set(offered.map((tool) => tool.function.name));
  const stream = body.stream === true;
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw badInput('stream', '"stream" must be true or false');
  const streamOptions = body.stream_options;
  const includeUsage = isPlainObject(streamOptions) && streamOptions.include_usage === true;
  // Generation parameters go through the server's caller policy, under their lagent names.
  const kwargs: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const key of Object.keys(body)) {
    if (PROTOCOL_KEYS.has(key)) continue;
    const name = GENERATION_KEYS[key];
    if (name === undefined) {
      if (body[key] !== undefined && body[key] !== null) ignored.push(key);
      continue;
    }
    if (body[key] === undefined || body[key] === null) continue;
    if (kwargs[name] !== undefined) throw badInput(key, `"${key}" gives ${name} twice`);
    Object.defineProperty(kwargs, name, { value: body[key], enumerable: true });
  }
  // The tools that are not the agent's are the call's client tools: only on a session, which keeps the call they
  // pause, and only for an agent whose tree asks a model with native tools (where they are offered).
  const agent = host.agent;
  let clientTools: readonly OpenAITool[] | undefined;
  if (agent instanceof AgentBase) {
    const own = treeToolNames(agent);
    const theirs = offered.filter((tool) => !own.names.has(tool.function.name));
    if (theirs.length > 0) {
      if (session !== undefined && own.native) clientTools = checkClientTools(agent, theirs);
      else ignored.push('tools');
    }
  }
  const options = callOptions(host, kwargs, reply, ignored);
  if (clientTools !== undefined) options.clientTools = clientTools;
  if (session === undefined) {
    const decisions = checked.some((message) => message.role === 'tool');
    if (decisions && checked.at(-1)!.role === 'tool') {
      throw new ProtocolRequestError({
        status: 400,
        code: 'SessionRequired',
        field: 'messages',
        message:
          'answers to tool calls need a session: send the "user" field or an X-Session-Id header naming it',
      });
    }
    return {
      sessionId: `openai-stateless:${randomUUID()}`,
      stateless: true,
      input: conversation(host, checked),
      answers: [],
      history: [],
      stream,
      includeUsage,
      tools,
      clientTools,
      options,
    };
  }
  // The newest message: the user's, or tool messages answering the calls that wait.
  let last = checked.length - 1;
  while (last >= 0 && isInstruction(checked[last]!)) last--;
  if (last < 0) throw badInput('messages', 'the messages hold no user message');
  const newest = checked[last]!;
  const answers: ToolAnswer[] = [];
  let before = last;
  let input: AgentMessage[] = [];
  if (newest.role === 'tool') {
    while (before >= 0 && checked[before]!.role === 'tool') {
      const message = checked[before]!;
      const id = message.tool_call_id;
      if (typeof id !== 'string' || id === '')
        throw badInput(`messages.${before}.tool_call_id`, 'a tool message needs its tool_call_id');
      if (answers.some((answer) => answer.message.tool_call_id === id))
        throw badInput(
          `messages.${before}.tool_call_id`,
          `the tool call ${JSON.stringify(id)} is answered twice`,
        );
      answers.unshift({ message, index: before });
      before--;
    }
    // The assistant message that asked for the calls belongs to the turn that paused.
  } else if (newest.role === 'user') {
    input = [new AgentMessage({ sender: 'user', content: userContent(newest.content, last) })];
    before = last - 1;
  } else {
    throw badInput(
      `messages.${last}.role`,
      "the newest message must be the user's (or tool messages answering the calls that wait)",
    );
  }
  const history: HistoryEntry[] = [];
  for (let i = 0; i <= before; i++) {
    const message = checked[i]!;
    if (message.role === 'user') history.push({ role: 'user', text: userText(message.content, i) });
    else if (message.role === 'assistant') history.push({ role: 'assistant', text: '' });
  }
  return {
    sessionId: session,
    stateless: false,
    input,
    answers,
    history,
    stream,
    includeUsage,
    tools,
    clientTools,
    options,
  };
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

function checkMessage(value: unknown, index: number): OpenAIMessage {
  if (!isPlainObject(value)) throw badInput(`messages.${index}`, `message ${index} must be an object`);
  const role = value.role;
  if (typeof role !== 'string' || !ROLES.has(role)) {
    throw badInput(
      `messages.${index}.role`,
      `message ${index} has the role ${JSON.stringify(role)}; known roles: system, developer, user, assistant, tool`,
    );
  }
  return value as unknown as OpenAIMessage;
}

/** System and developer messages: the agent's own instructions stay; a client's are not taken. */
function isInstruction(message: OpenAIMessage): boolean {
  return message.role === 'system' || message.role === 'developer';
}

/** The request's `tools`: OpenAI function specs (`{ type: 'function', function: { name, ... } }`). */
function offeredTools(tools: unknown): OpenAITool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw badInput('tools', '"tools" must be an array of function tools');
  return tools.map((entry: unknown, index) => {
    const fn = isPlainObject(entry) ? entry.function : undefined;
    if (
      !isPlainObject(entry) ||
      entry.type !== 'function' ||
      !isPlainObject(fn) ||
      typeof fn.name !== 'string'
    )
      throw badInput(
        `tools.${index}`,
        'a tool must be { type: "function", function: { name, description?, parameters? } }',
      );
    return entry as unknown as OpenAITool;
  });
}

/**
 * The names of the tools of an agent's tree (as a model sees them), and whether some agent of it asks its model
 * with native tools (where client tools are offered).
 */
function treeToolNames(agent: AgentBase): { names: Set<string>; native: boolean } {
  const names = new Set<string>();
  let native = false;
  for (const [, node] of agent.namedAgents()) {
    const own = (node as { tools?: readonly ToolSpec[] | undefined }).tools;
    if (own === undefined) continue;
    native = true;
    for (const tool of toolsAsJSON(own)) names.add(toAPIToolName(tool.function.name));
  }
  return { names, native };
}

/**
 * The decisions the request's tool messages give: the output of a client tool's call that waits, else an
 * approval's answer (a call that does not wait is refused by `checkDecisions`).
 */
async function decisionsOf(host: ProtocolHost, read: ReadRequest): Promise<Decision[]> {
  if (read.answers.length === 0) return [];
  const agent = host.agent;
  const clientCalls = new Set(
    agent instanceof AgentBase
      ? (await pendingInterrupts(agent, read.sessionId))
          .filter((ask) => ask.kind === 'client-tool')
          .map((ask) => ask.id)
      : [],
  );
  return read.answers.map(({ message, index }) =>
    clientCalls.has(message.tool_call_id as string)
      ? { id: message.tool_call_id as string, approve: true, result: toolMessageText(message) }
      : decisionOf(message, index),
  );
}

/** A tool message's text (its content parts' texts joined). */
function toolMessageText(message: OpenAIMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content
    .map((part) => (isPlainObject(part) && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

/** A user message's content: its text, or content parts when it holds images. */
function userContent(content: unknown, index: number): string | ContentPart[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badInput(`messages.${index}.content`, 'a user message needs content');
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (isPlainObject(part) && part.type === 'text' && typeof part.text === 'string')
      parts.push({ type: 'text', text: part.text });
    else if (
      isPlainObject(part) &&
      part.type === 'image_url' &&
      isPlainObject(part.image_url) &&
      typeof part.image_url.url === 'string'
    )
      parts.push({ type: 'image', image: remoteSource(part.image_url.url, `messages.${index}.content`) });
    else {
      throw badInput(
        `messages.${index}.content`,
        'content parts must be { type: "text", text } or { type: "image_url", image_url: { url } }',
      );
    }
  }
  return parts.every((part) => part.type === 'text')
    ? parts.map((part) => (part as { text: string }).text).join('')
    : parts;
}

function userText(content: unknown, index: number): string {
  const value = userContent(content, index);
  if (typeof value === 'string') return value;
  return value.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** A tool message answering a call that waits: `approve`, `decline` (`decline: why`), or `{ approve, reason?, arguments? }`. */
function decisionOf(message: OpenAIMessage, index: number): Decision {
  const id = message.tool_call_id as string;
  const text = toolMessageText(message).trim();
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (isPlainObject(parsed) && typeof parsed.approve === 'boolean') {
      if (parsed.approve) {
        const args = parsed.arguments;
        if (args !== undefined && !isPlainObject(args) && typeof args !== 'string')
          throw badInput(`messages.${index}.content`, '"arguments" must be an object');
        return args === undefined
          ? { id, approve: true }
          : { id, approve: true, arguments: args as Record<string, unknown> };
      }
      return typeof parsed.reason === 'string'
        ? { id, approve: false, reason: parsed.reason }
        : { id, approve: false };
    }
  }
  const match = /^(approve|approved|yes|decline|declined|deny|denied|no)\b\s*:?\s*([\s\S]*)$/i.exec(text);
  if (match === null) {
    throw badInput(
      `messages.${index}.content`,
      `the answer to ${JSON.stringify(id)} must be "approve", "decline" (or "decline: why"), or { "approve": true | false, "reason"?: ..., "arguments"?: {...} }`,
    );
  }
  const word = match[1]!.toLowerCase();
  if (word.startsWith('approve') || word === 'yes') return { id, approve: true };
  const reason = match[2]!.trim();
  return reason === '' ? { id, approve: false } : { id, approve: false, reason };
}

/** A stateless request's conversation as the agent's input: the user's messages and the assistant's texts. */
function conversation(host: ProtocolHost, messages: readonly OpenAIMessage[]): AgentMessage[] {
  const name = host.agent.name ?? 'agent';
  const input: AgentMessage[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'user')
      input.push(new AgentMessage({ sender: 'user', content: userContent(message.content, index) }));
    else if (message.role === 'assistant' && typeof message.content === 'string' && message.content !== '')
      input.push(new AgentMessage({ sender: name, content: message.content }));
  });
  if (input.length === 0 || input.at(-1)!.sender !== 'user')
    throw badInput('messages', "the newest message must be the user's");
  return input;
}

/** Clears a stateless request's session in the whole tree. */
function forget(host: ProtocolHost, sessionId: SessionId): void {
  const reset = (host.agent as { reset?: (id: SessionId, options?: object) => unknown }).reset;
  if (typeof reset !== 'function') return;
  try {
    const done = reset.call(host.agent, sessionId, { recursive: true });
    if (done instanceof Promise) done.catch(() => undefined);
  } catch {
    // nothing to clear
  }
}

function errorBody(answer: Answer): Record<string, unknown> {
  return {
    error: {
      message: answer.message,
      type: answer.status < 500 ? 'invalid_request_error' : 'server_error',
      code: answer.code,
      param: null,
      ...(answer.refusal === undefined ? {} : { details: answer.refusal }),
    },
  };
}

function sendError(reply: FastifyReply, answer: Answer): void {
  reply
    .code(answer.status)
    .type(JSON_TYPE)
    .send(JSON.stringify(errorBody(answer)));
}
