import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { checkClientTools } from '../../agents/interceptors/approvals/client-tools';
import { pendingInterrupts } from '../../agents/pending-interrupts';
import { AgentMessage } from '../../schema/agent-message';
import type { OpenAITool, ToolCall } from '../../schema/chat-message';
import type { ContentPart } from '../../schema/content-parts';
import { ConfigurationError } from '../../schema/errors';
import {
  type Decision,
  type Interrupt,
  interruptId,
  interruptsOf,
  resumeWith,
} from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import { checkSessionId } from '../http/protocol';
import {
  answerOf,
  badInput,
  callOptions,
  checkDecisions,
  checkHistory,
  checkScope,
  EventStream,
  type HistoryEntry,
  inputFor,
  isCallersMistake,
  isCancelled,
  refuse,
  remoteSource,
  runAnswer,
  SESSION_SCOPED,
} from './request';
import type { ProtocolHost, RunObserver, ToolResultText } from './run';
import { loggedErrorText, type RunLogEnds, RunLogReader, serveRunLog } from './run-log';

/*
 * The AI SDK's UI message stream (`ai@7`), what `useChat` / `DefaultChatTransport` send and read:
 * `POST /api/chat` takes the transport's body (`id`: the session, `messages`: UI messages, `trigger`,
 * `messageId`) and answers the stream of UI message chunks over server-sent events. Only the newest user
 * message, or the approval responses of the last assistant message (and the outputs of the route's client tools
 * that wait), is taken; the session's memory is the truth.
 * Each call is a run whose log the stream is read from, so `GET /api/chat/{id}/stream` (what
 * `useChat({ resume: true })` asks) serves a reply in progress again, from the same log, to any client.
 */

/** Where the route goes, and the tools the page runs itself. */
export interface UIMessageStreamOptions {
  /** @default '/api/chat' */
  path?: string | undefined;
  /**
   * Tools the page runs itself (the AI SDK's tools without `execute`), as OpenAI function specs: every call of
   * the route offers them to the agent's models as client tools (see `CallOptions.clientTools`). A model's call
   * of one ends the message with its tool part waiting for input; the page answers it with `addToolOutput`, and
   * the next request (`sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls`) resumes the call.
   */
  clientTools?: readonly OpenAITool[] | undefined;
}

/** What the `data-agent` parts carry: a sub-agent call and its tool calls, updated in place as it runs. */
export interface AgentProgress {
  /** The sub-agent's dotted path in the served agent's tree (`researcher`, `experts.0`). */
  path: string;
  name: string;
  description?: string | undefined;
  status: 'running' | 'done' | 'failed' | 'waiting';
  toolCalls: {
    id: string;
    name: string;
    arguments: Record<string, unknown> | string;
    status: 'running' | 'done' | 'failed';
    result?: string | undefined;
  }[];
}

const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};
/** Body keys of the protocol itself; any other key is a call option (through the caller policy). */
const PROTOCOL_KEYS = new Set(['id', 'messages', 'trigger', 'messageId', 'metadata']);

interface ReadRequest {
  sessionId: SessionId;
  input: AgentMessage[];
  decisions: Decision[];
  history: HistoryEntry[];
  /** The assistant message a resume continues. */
  continues: string | undefined;
  /** The outputs of the last assistant message's tool parts (those of client tools that wait answer them). */
  outputs: { id: string; text: string }[];
  options: Record<string, unknown>;
}

/** Registers `POST {path}` and `GET {path}/:id/stream` (the reconnect of `useChat({ resume: true })`). */
export function registerUIMessageStream(
  app: FastifyInstance,
  host: ProtocolHost,
  options: UIMessageStreamOptions = {},
): void {
  const path = options.path ?? '/api/chat';
  const clientTools = checkedClientTools(host, options.clientTools);
  app.post(path, SESSION_SCOPED, (request, reply) => chat(host, clientTools, request, reply));
  app.get(`${path}/:id/stream`, SESSION_SCOPED, (request, reply) => reconnect(host, request, reply));
}

/**
 * `POST {path}`: the call runs as a run of the session (its log kept), and the answer is that log as the UI
 * message stream, the message's id being the run's. A client that goes away leaves the run going (unless the
 * server's `abortOnDisconnect` is true), and comes back for it with `GET {path}/{id}/stream`. An approval's
 * answer goes on with the run that waits for it, the stream continuing its message.
 */
async function chat(
  host: ProtocolHost,
  clientTools: readonly OpenAITool[] | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  let read: ReadRequest;
  try {
    read = readRequest(host, request.body, reply);
    checkScope(request, read.sessionId);
    if (clientTools !== undefined) read.options.clientTools = clientTools;
    if (read.outputs.length > 0) read.decisions.push(...(await clientResults(host, read)));
    if (read.input.length === 0 && read.decisions.length === 0) {
      throw badInput(
        'messages',
        "the newest message must be the user's, or an assistant message with approval responses or the outputs of the tools it waits for",
      );
    }
    await checkHistory(host, read.sessionId, read.history, 'one message');
    await checkDecisions(host, read.sessionId, read.decisions);
  } catch (error) {
    refuse(reply, answerOf(host, error));
    return;
  }
  const { sessionId, decisions } = read;
  const { callId, ...callOptions } = read.options;
  let runId = callId as string | undefined;
  let after = 0;
  let resumed = false;
  let started: Awaited<ReturnType<ProtocolHost['runs']['start']>>;
  try {
    if (decisions.length > 0) {
      // The run that waits for these decisions goes on: the stream is the rest of its log.
      const waiting =
        runId === undefined ? await host.runs.waitingRun(String(sessionId)) : await host.runs.read(runId);
      if (waiting?.status === 'waiting' && waiting.sessionId === String(sessionId)) {
        runId = waiting.runId;
        after = waiting.lastSeq;
        resumed = true;
      }
    }
    const input = decisions.length > 0 ? [resumeWith(decisions)] : read.input;
    started = await host.runs.start(inputFor(host, input), sessionId, callOptions, runId);
  } catch (error) {
    if (!isCallersMistake(error)) host.onError(error, { route: 'ai-sdk', sessionId });
    refuse(reply, answerOf(host, error));
    return;
  }
  const { run } = started;
  const id = run?.id ?? started.record!.runId;
  // A call id given again names the run it started: its whole log is the answer, and nothing runs twice.
  if (run === undefined) {
    after = 0;
    resumed = false;
  }
  run?.result.catch((error: unknown) => {
    if (!isCallersMistake(error) && !isCancelled(error)) host.onError(error, { route: 'ai-sdk', sessionId });
  });
  const controller = new AbortController();
  const out = new EventStream(reply, controller, HEADERS);
  const encoder = new UIMessageEncoder((chunk) => out.write(frame(chunk)), read.continues ?? id);
  const reader = new RunLogReader(host, encoder, endsOf(host, encoder));
  await serveRunLog({
    host,
    reply,
    out,
    controller,
    runId: id,
    sessionId,
    after,
    route: 'ai-sdk',
    inFlight: true,
    resumed,
    take: (event) => reader.take(event),
    end: () => out.write(DONE),
    broken: (message) => {
      encoder.fail(message);
      out.write(DONE);
    },
    ...runAnswer(host, reply, run, id),
  });
}

/** The route's client tools, checked against the agent's own when it is of lagent-ts. */
function checkedClientTools(
  host: ProtocolHost,
  given: readonly OpenAITool[] | undefined,
): readonly OpenAITool[] | undefined {
  if (given === undefined || !(host.agent instanceof AgentBase)) return undefined;
  try {
    return checkClientTools(host.agent, given);
  } catch (error) {
    throw new ConfigurationError({ message: `protocols.ai-sdk.clientTools: ${errorMessage(error)}` });
  }
}

/**
 * `GET {path}/{id}/stream`: the UI message stream of the session's run in progress, from its start (the AI SDK
 * replays a resumed stream into a message of its own), then live; 204 when the session has none (no run, or its
 * newest ended or waits for a decision, whose message was streamed whole).
 */
async function reconnect(host: ProtocolHost, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { id } = request.params as { id: string };
  let record: Awaited<ReturnType<ProtocolHost['runs']['activeRun']>>;
  try {
    checkSessionId(id);
    checkScope(request, id);
    record = await host.runs.activeRun(id);
  } catch (error) {
    if (!isCallersMistake(error)) host.onError(error, { route: 'ai-sdk', sessionId: id });
    refuse(reply, answerOf(host, error));
    return;
  }
  if (record === undefined || record.status === 'waiting') {
    reply.code(204).send();
    return;
  }
  const controller = new AbortController();
  const out = new EventStream(reply, controller, HEADERS);
  const encoder = new UIMessageEncoder((chunk) => out.write(frame(chunk)), record.runId);
  const reader = new RunLogReader(host, encoder, endsOf(host, encoder));
  // The head goes now: the client knows it is connected while the run has nothing new to say.
  out.start();
  reply.raw.flushHeaders();
  await serveRunLog({
    host,
    reply,
    out,
    controller,
    runId: record.runId,
    sessionId: id,
    after: 0,
    route: 'ai-sdk',
    take: (event) => reader.take(event),
    end: () => out.write(DONE),
    broken: (message) => {
      encoder.fail(message);
      out.write(DONE);
    },
  });
}

const DONE = 'data: [DONE]\n\n';

function frame(chunk: Record<string, unknown>): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** How a run read from its log ends a UI message. */
function endsOf(host: ProtocolHost, encoder: UIMessageEncoder): RunLogEnds {
  return {
    resumed: (decisions) => encoder.resumed(decisions),
    finish: (reply) => encoder.finish(reply),
    fail: (error) =>
      error.status === 'cancelled' ? encoder.abort(error.detail) : encoder.fail(loggedErrorText(host, error)),
  };
}

/**
 * Turns what a call does into UI message chunks: the text and reasoning of each model turn as parts of their
 * own, the served agent's tool calls as dynamic tool parts (input, then output), each sub-agent call as a
 * `data-agent` part updated in place ({@link AgentProgress}), and the calls that wait for approval as tool parts
 * with an approval request. Nothing is written before the first chunk is known.
 */
export class UIMessageEncoder implements RunObserver {
  readonly #write: (chunk: Record<string, unknown>) => unknown;
  readonly #messageId: string;
  /** Decisions of the run's resume, by interrupt id: their tool parts exist on the client already. */
  #decided: Map<string, Decision>;
  /** The approval requests this stream made (a run read from its start, resumed since). */
  readonly #asked = new Set<string>();
  #started = false;
  #inStep = false;
  #text: string | undefined;
  #reasoning: string | undefined;
  #parts = 0;
  /** Text was written since the last tool round (else the final reply's text is written at the end). */
  #textSinceTools = false;
  #reasoned = false;
  readonly #agents = new Map<string, { id: string; progress: AgentProgress }[]>();

  constructor(
    write: (chunk: Record<string, unknown>) => unknown,
    messageId: string,
    decisions: readonly Decision[] = [],
  ) {
    this.#write = write;
    this.#messageId = messageId;
    this.#decided = new Map(decisions.map((decision) => [decision.id, decision]));
  }

  #send(chunk: Record<string, unknown>): void {
    if (!this.#started) {
      this.#started = true;
      this.#write({ type: 'start', messageId: this.#messageId });
    }
    if (!this.#inStep && chunk.type !== 'finish') {
      this.#inStep = true;
      this.#write({ type: 'start-step' });
    }
    this.#write(chunk);
  }

  /**
   * Ends the step of a model turn whose tool calls returned: the next turn is a step of its own, as the AI SDK
   * streams them (so `lastAssistantMessageIsCompleteWithToolCalls` sees the final answer's step without tools).
   */
  #finishStep(): void {
    if (!this.#inStep) return;
    this.#inStep = false;
    this.#write({ type: 'finish-step' });
  }

  text(delta: string): void {
    this.#closeReasoning();
    if (this.#text === undefined) {
      this.#text = `text-${++this.#parts}`;
      this.#send({ type: 'text-start', id: this.#text });
    }
    this.#textSinceTools = true;
    this.#send({ type: 'text-delta', id: this.#text, delta });
  }

  reasoning(delta: string): void {
    this.#closeText();
    if (this.#reasoning === undefined) {
      this.#reasoning = `reasoning-${++this.#parts}`;
      this.#send({ type: 'reasoning-start', id: this.#reasoning });
    }
    this.#reasoned = true;
    this.#send({ type: 'reasoning-delta', id: this.#reasoning, delta });
  }

  toolsStarted(path: string, calls: readonly ToolCall[]): void {
    this.#closeText();
    this.#closeReasoning();
    if (path === '') {
      for (const call of calls) {
        // A call resumed by this request's decision has its part on the client, waiting for its output.
        if (this.#decided.has(call.id)) continue;
        this.#send({
          type: 'tool-input-available',
          toolCallId: call.id,
          toolName: call.name,
          input: call.arguments,
          dynamic: true,
        });
      }
      return;
    }
    const agent = this.#agentAt(path);
    if (agent === undefined) return;
    for (const call of calls) {
      agent.progress.toolCalls.push({
        id: call.id,
        name: call.name,
        arguments: call.arguments,
        status: 'running',
      });
    }
    this.#progress(agent);
  }

  toolsEnded(path: string, calls: readonly ToolCall[], results: readonly ToolResultText[]): void {
    calls.forEach((call, index) => {
      const result = results[index] ?? { text: '' };
      const id = interruptId(path, call);
      if (path === '' || this.#decided.has(id)) this.#toolOutput(id, result);
    });
    this.#textSinceTools = false;
    if (path === '') {
      this.#finishStep();
      return;
    }
    const agent = this.#agentAt(path);
    if (agent === undefined) return;
    calls.forEach((call, index) => {
      const entry = agent.progress.toolCalls.find((candidate) => candidate.id === call.id);
      const result = results[index];
      if (entry === undefined) return;
      entry.status = result?.error === undefined ? 'done' : 'failed';
      entry.result = result?.text;
    });
    this.#progress(agent);
  }

  agentStarted(path: string, name: string, description: string | undefined): void {
    this.#closeText();
    this.#closeReasoning();
    const progress: AgentProgress = { path, name, status: 'running', toolCalls: [] };
    if (description !== undefined) progress.description = description;
    const agent = { id: `agent-${++this.#parts}`, progress };
    const open = this.#agents.get(path);
    if (open === undefined) this.#agents.set(path, [agent]);
    else open.push(agent);
    this.#progress(agent);
  }

  agentEnded(path: string, outcome: 'done' | 'failed'): void {
    const open = this.#agents.get(path);
    const agent = open?.pop();
    if (agent === undefined) return;
    if (open!.length === 0) this.#agents.delete(path);
    agent.progress.status = outcome;
    this.#progress(agent);
  }

  /**
   * The run goes on with decisions (a resume): the calls they answer have their tool parts on the client, and
   * those whose approval request this stream made are told answered (`tool-approval-response`).
   */
  resumed(decisions: readonly Decision[]): void {
    this.#decided = new Map(decisions.map((decision) => [decision.id, decision]));
    for (const decision of decisions) {
      if (!this.#asked.has(decision.id)) continue;
      this.#send({
        type: 'tool-approval-response',
        approvalId: decision.id,
        approved: decision.approve,
        ...(decision.approve || decision.reason === undefined ? {} : { reason: decision.reason }),
      });
    }
  }

  /**
   * Ends the message with the call's reply: its text when none was streamed, or the calls that wait. A run that
   * goes on after it (resumed) continues the same message, from a new `start`.
   */
  finish(reply: AgentMessage): void {
    const interrupts = interruptsOf(reply);
    this.#closeAgents(interrupts.length > 0 ? 'waiting' : 'done');
    if (interrupts.length === 0) {
      const content = reply.content;
      if (!this.#textSinceTools && typeof content === 'string' && content !== '') {
        const reasoning = (reply.extraInfo as { reasoning?: unknown } | null)?.reasoning;
        if (!this.#reasoned && typeof reasoning === 'string' && reasoning !== '') this.reasoning(reasoning);
        this.text(content);
      }
    }
    this.#closeText();
    this.#closeReasoning();
    for (const ask of interrupts) {
      if (ask.kind === 'client-tool') this.#toolInput(ask);
      else this.#askApproval(ask);
    }
    const info = reply.extraInfo as { maxTurnReached?: unknown } | null;
    this.#send({
      type: 'finish',
      finishReason:
        interrupts.length > 0
          ? 'tool-calls'
          : info !== null && typeof info === 'object' && info.maxTurnReached === true
            ? 'length'
            : 'stop',
    });
    this.#started = false;
    this.#inStep = false;
    this.#textSinceTools = false;
    this.#reasoned = false;
  }

  /** Ends the message as stopped (the run was cancelled): what is open is closed, then an `abort` chunk. */
  abort(reason: string): void {
    this.#closeAgents('failed');
    this.#closeText();
    this.#closeReasoning();
    this.#send({ type: 'abort', reason });
  }

  /** Ends the message with an error part. */
  fail(message: string): void {
    this.#closeAgents('failed');
    this.#closeText();
    this.#closeReasoning();
    this.#send({ type: 'error', errorText: message });
  }

  /** A call that waits: its tool part (a client tool's waits for the page's output). */
  #toolInput(ask: Interrupt): void {
    this.#send({
      type: 'tool-input-available',
      toolCallId: ask.id,
      toolName: ask.toolCall.name,
      input: ask.toolCall.arguments,
      dynamic: true,
      ...(ask.path === '' ? {} : { title: `${ask.path}: ${ask.toolCall.name}` }),
    });
  }

  #askApproval(ask: Interrupt): void {
    this.#asked.add(ask.id);
    this.#toolInput(ask);
    this.#send({ type: 'tool-approval-request', approvalId: ask.id, toolCallId: ask.id });
  }

  #toolOutput(toolCallId: string, result: ToolResultText): void {
    const decision = this.#decided.get(toolCallId);
    if (decision !== undefined && !decision.approve) {
      this.#send({ type: 'tool-output-denied', toolCallId });
      return;
    }
    // A client tool's output came from the page: its part has it already.
    if (decision?.result !== undefined) return;
    if (result.error !== undefined) {
      this.#send({ type: 'tool-output-error', toolCallId, errorText: result.error, dynamic: true });
      return;
    }
    this.#send({ type: 'tool-output-available', toolCallId, output: result.text, dynamic: true });
  }

  #agentAt(path: string): { id: string; progress: AgentProgress } | undefined {
    return this.#agents.get(path)?.at(-1);
  }

  #progress(agent: { id: string; progress: AgentProgress }): void {
    this.#send({ type: 'data-agent', id: agent.id, data: agent.progress });
  }

  #closeAgents(status: AgentProgress['status']): void {
    for (const open of this.#agents.values()) {
      for (const agent of open) {
        agent.progress.status = status;
        this.#progress(agent);
      }
    }
    this.#agents.clear();
  }

  #closeText(): void {
    if (this.#text === undefined) return;
    this.#send({ type: 'text-end', id: this.#text });
    this.#text = undefined;
  }

  #closeReasoning(): void {
    if (this.#reasoning === undefined) return;
    this.#send({ type: 'reasoning-end', id: this.#reasoning });
    this.#reasoning = undefined;
  }
}

interface UIMessageLike {
  id?: unknown;
  role: 'user' | 'assistant' | 'system';
  parts: Record<string, unknown>[];
}

/** Reads and checks the transport's body; sets the header naming the options it ignored. */
function readRequest(host: ProtocolHost, body: unknown, reply: FastifyReply): ReadRequest {
  if (!isPlainObject(body)) throw badInput('(root)', 'the body must be a JSON object');
  const id = body.id;
  if (typeof id !== 'string' || id === '')
    throw badInput('id', '"id" (the chat, which is the session) must be a non-empty string');
  checkSessionId(id);
  if (body.trigger !== undefined && body.trigger !== 'submit-message') {
    throw badInput(
      'trigger',
      body.trigger === 'regenerate-message'
        ? 'regenerating a message is not supported: the session keeps its conversation; send a new message'
        : `unknown trigger ${JSON.stringify(body.trigger)}`,
    );
  }
  const raw = body.messages;
  if (!Array.isArray(raw) || raw.length === 0)
    throw badInput('messages', '"messages" must be a non-empty array');
  const messages = raw
    .map((message, index) => checkMessage(message, index))
    .filter((message) => message.role !== 'system');
  const kwargs: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if (!PROTOCOL_KEYS.has(key)) Object.defineProperty(kwargs, key, { value: body[key], enumerable: true });
  }
  const options = callOptions(host, kwargs, reply);
  const newest = messages.at(-1);
  if (newest === undefined) throw badInput('messages', 'the messages hold no user message');
  if (newest.role === 'user') {
    return {
      sessionId: id,
      input: [new AgentMessage({ sender: 'user', content: userContent(newest, messages.length - 1) })],
      decisions: [],
      history: historyOf(messages.slice(0, -1)),
      continues: undefined,
      outputs: [],
      options,
    };
  }
  // The last assistant message answered: its approval responses, and the outputs of the client tools that
  // wait (found among its tool parts once the call is known), resume the call that waits.
  const decisions: Decision[] = [];
  const outputs: { id: string; text: string }[] = [];
  for (const part of newest.parts) {
    if (
      typeof part.toolCallId === 'string' &&
      (part.state === 'output-available' || part.state === 'output-error')
    ) {
      const output =
        part.state === 'output-error' ? `The tool failed: ${String(part.errorText ?? '')}` : part.output;
      outputs.push({
        id: part.toolCallId,
        text: typeof output === 'string' ? output : (JSON.stringify(output) ?? ''),
      });
      continue;
    }
    if (part.state !== 'approval-responded' || !isPlainObject(part.approval)) continue;
    const approval = part.approval;
    if (typeof approval.id !== 'string' || typeof approval.approved !== 'boolean')
      throw badInput('messages', 'an approval response needs { id: string, approved: boolean }');
    if (approval.approved) decisions.push({ id: approval.id, approve: true });
    else
      decisions.push(
        typeof approval.reason === 'string' && approval.reason !== ''
          ? { id: approval.id, approve: false, reason: approval.reason }
          : { id: approval.id, approve: false },
      );
  }
  return {
    sessionId: id,
    input: [],
    decisions,
    history: historyOf(messages),
    continues: typeof newest.id === 'string' && newest.id !== '' ? newest.id : undefined,
    outputs,
    options,
  };
}

/**
 * The decisions the tool outputs of a request give: those of the client tools' calls the session waits for
 * (the message's other tool parts are its server tools', or calls answered before).
 */
async function clientResults(host: ProtocolHost, read: ReadRequest): Promise<Decision[]> {
  if (!(host.agent instanceof AgentBase)) return [];
  const waiting = new Set(
    (await pendingInterrupts(host.agent, read.sessionId))
      .filter((ask) => ask.kind === 'client-tool')
      .map((ask) => ask.id),
  );
  return read.outputs
    .filter((output) => waiting.has(output.id))
    .map((output) => ({ id: output.id, approve: true, result: output.text }));
}

function checkMessage(value: unknown, index: number): UIMessageLike {
  if (!isPlainObject(value)) throw badInput(`messages.${index}`, `message ${index} must be an object`);
  const role = value.role;
  if (role !== 'user' && role !== 'assistant' && role !== 'system') {
    throw badInput(
      `messages.${index}.role`,
      `message ${index} has the role ${JSON.stringify(role)}; UI messages are system, user or assistant`,
    );
  }
  const parts = value.parts;
  if (!Array.isArray(parts) || !parts.every(isPlainObject))
    throw badInput(`messages.${index}.parts`, `message ${index} needs "parts": an array of parts`);
  return value as unknown as UIMessageLike;
}

function historyOf(messages: readonly UIMessageLike[]): HistoryEntry[] {
  return messages.map((message) => ({
    role: message.role === 'user' ? 'user' : 'assistant',
    text: message.role === 'user' ? textOf(message) : '',
  }));
}

function textOf(message: UIMessageLike): string {
  let text = '';
  for (const part of message.parts)
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
  return text;
}

/** A user message's content: its text, or content parts when it has files. */
function userContent(message: UIMessageLike, index: number): string | ContentPart[] {
  const parts: ContentPart[] = [];
  for (const part of message.parts) {
    if (part.type === 'text') {
      if (typeof part.text !== 'string')
        throw badInput(`messages.${index}.parts`, 'a text part needs "text"');
      parts.push({ type: 'text', text: part.text });
    } else if (part.type === 'file') {
      const { url, mediaType, filename } = part;
      if (typeof url !== 'string' || typeof mediaType !== 'string')
        throw badInput(`messages.${index}.parts`, 'a file part needs "url" and "mediaType"');
      const source = remoteSource(url, `messages.${index}.parts`);
      if (mediaType.startsWith('image/')) parts.push({ type: 'image', image: source, mediaType });
      else
        parts.push({
          type: 'file',
          data: source,
          mediaType,
          ...(typeof filename === 'string' ? { filename } : {}),
        });
    }
  }
  if (parts.length === 0) throw badInput(`messages.${index}.parts`, 'the user message has no text');
  return parts.every((part) => part.type === 'text')
    ? parts.map((part) => (part as { text: string }).text).join('')
    : parts;
}
