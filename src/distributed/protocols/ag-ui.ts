import type { Interrupt as AGUIInterrupt, BaseEvent } from '@ag-ui/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import type { Run } from '../../agents/runs/run';
import { AgentMessage } from '../../schema/agent-message';
import type { OpenAITool, ToolCall } from '../../schema/chat-message';
import type { ContentPart } from '../../schema/content-parts';
import { missingPeer } from '../../schema/errors';
import { type Decision, interruptId, interruptsOf, resumeWith } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import type { RunRecord } from '../../stores/types';
import { isPlainObject } from '../../utils/is';
import { checkSessionId } from '../http/protocol';
import type { ProtocolRoutes } from './register';
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
  ProtocolRequestError,
  refuse,
  remoteSource,
  runAnswer,
  SESSION_SCOPED,
} from './request';
import type { ProtocolHost, RunObserver, ToolResultText } from './run';
import { loggedErrorText, RunLogReader, serveRunLog } from './run-log';

/*
 * AG-UI (`@ag-ui/core` 1.0): `POST /ag-ui` takes a `RunAgentInput` (`threadId`: the session) and answers AG-UI
 * events over server-sent events, encoded by `@ag-ui/encoder` (protobuf when the client asks for it). A call
 * that pauses for approval finishes its run with the `interrupt` outcome; the next `RunAgentInput` resumes it
 * with `resume` entries. Frontend tools (`tools`) are the call's client tools: a model's call of one ends the
 * run (a completed one, the call in `pendingToolCallIds`), and the next `RunAgentInput`, whose newest messages
 * are the tool messages answering them, resumes it. Only the newest user message (or the resume entries and
 * tool results) is taken: the session's memory is the truth. Each AG-UI run is a run of the server (its `runId` the run's), streamed from its log: AG-UI defines
 * no reconnect for its HTTP transport, so the same `RunAgentInput` sent again (same `threadId` and `runId`) is
 * answered from that run's log, from `RUN_STARTED` on, without running anything twice.
 */

/** Where the route goes. */
export interface AGUIOptions {
  /** @default '/ag-ui' */
  path?: string | undefined;
}

interface Encoder {
  getContentType(): string;
  encodeSSE(event: BaseEvent): string;
  encodeBinary(event: BaseEvent): Uint8Array;
}
type EncoderClass = new (params?: { accept?: string }) => Encoder;

/** AG-UI's protobuf media type (`AGUI_MEDIA_TYPE` of `@ag-ui/proto`). */
const PROTOBUF_TYPE = 'application/vnd.ag-ui.event+proto';
/** Keys of `RunAgentInput` read here; `forwardedProps` go through the caller policy. */
const ROLES = new Set(['developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning']);

/** Loads `@ag-ui/encoder` (an optional peer) and gives the route. */
export async function loadAGUI(options: AGUIOptions = {}): Promise<ProtocolRoutes & { paths: string[] }> {
  const path = options.path ?? '/ag-ui';
  let Encoder: EncoderClass;
  try {
    ({ EventEncoder: Encoder } = (await import('@ag-ui/encoder')) as unknown as {
      EventEncoder: EncoderClass;
    });
  } catch (error) {
    throw Object.assign(missingPeer(['@ag-ui/core', '@ag-ui/encoder'], 'the AG-UI route', error), {
      paths: [path],
    });
  }
  return Object.assign(
    (app: FastifyInstance, host: ProtocolHost) => {
      app.post(path, SESSION_SCOPED, (request, reply) => run(host, Encoder, request, reply));
    },
    { paths: [path] },
  );
}

interface ReadInput {
  threadId: string;
  runId: string;
  input: AgentMessage[];
  decisions: Decision[];
  history: HistoryEntry[];
  stateSnapshot: boolean;
  options: Record<string, unknown>;
}

async function run(
  host: ProtocolHost,
  Encoder: EncoderClass,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  let read: ReadInput;
  let existing: RunRecord | undefined;
  try {
    read = readInput(host, request.body, reply);
    checkScope(request, read.threadId);
    existing = await host.runs.read(read.runId);
    if (existing !== undefined && existing.sessionId !== read.threadId) {
      throw new ProtocolRequestError({
        status: 409,
        code: 'RunIdTaken',
        field: 'runId',
        message: `run ${JSON.stringify(read.runId)} is a run of another thread; give each run an id of its own`,
      });
    }
    if (existing === undefined) {
      await checkHistory(host, read.threadId, read.history);
      await checkDecisions(host, read.threadId, read.decisions);
    }
  } catch (error) {
    if (!isCallersMistake(error)) host.onError(error, { route: 'ag-ui', sessionId: undefined });
    refuse(reply, answerOf(host, error));
    return;
  }
  const { threadId, runId } = read;
  // A RunAgentInput sent again with the runId of a run of its thread is answered from that run's log: how a
  // client whose connection dropped reconnects, and nothing runs twice.
  let local: Run | undefined;
  if (existing === undefined) {
    const { callId: _, ...callOptions } = read.options;
    const input = read.decisions.length > 0 ? [resumeWith(read.decisions)] : read.input;
    try {
      local = (await host.runs.start(inputFor(host, input), threadId, callOptions, runId)).run;
    } catch (error) {
      if (!isCallersMistake(error)) host.onError(error, { route: 'ag-ui', sessionId: threadId });
      refuse(reply, answerOf(host, error));
      return;
    }
    local?.result.catch((error: unknown) => {
      if (!isCallersMistake(error) && !isCancelled(error))
        host.onError(error, { route: 'ag-ui', sessionId: threadId });
    });
  }
  // Protobuf for a client that names AG-UI's media type; server-sent events for anyone else (`*/*` included,
  // which the encoder alone would answer in protobuf).
  const accept = request.headers.accept;
  const encoder = new Encoder(accept?.includes(PROTOBUF_TYPE) ? { accept } : {});
  const type = encoder.getContentType();
  const binary = type !== 'text/event-stream';
  const controller = new AbortController();
  const out = new EventStream(reply, controller, {
    'content-type': binary ? type : 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const events = new AGUIEncoder(
    (event) => out.write(binary ? Buffer.from(encoder.encodeBinary(event)) : encodeSSE(encoder, event)),
    threadId,
    runId,
  );
  const reader = new RunLogReader(host, events, {
    resumed: (decisions) => events.resumed(decisions),
    finish: async (message) => {
      const snapshot = read.stateSnapshot ? await host.stateOf(threadId) : undefined;
      events.finish(message, snapshot);
    },
    fail: (error) =>
      error.status === 'cancelled'
        ? events.cancelled()
        : events.fail(loggedErrorText(host, error), error.error),
  });
  await serveRunLog({
    host,
    reply,
    out,
    controller,
    runId,
    sessionId: threadId,
    after: 0,
    route: 'ag-ui',
    inFlight: local !== undefined,
    heartbeat: !binary,
    take: (event) => reader.take(event),
    broken: (message) => events.fail(message, 'RunLogError'),
    ...runAnswer(host, reply, local, runId),
  });
}

/**
 * The events a streamed reply sends one per chunk. Each of their fields is a string this module sets, never an
 * optional `null` for the encoder to drop, so their frame is the encoder's without its walk over the event's
 * schema (test/distributed/protocols/ag-ui-frames.test.ts checks the frames are the same).
 */
const DELTA_EVENTS = new Set(['TEXT_MESSAGE_CONTENT', 'REASONING_MESSAGE_CONTENT', 'TOOL_CALL_ARGS']);

/** An event as a server-sent event frame, as `EventEncoder.encodeSSE` writes it. */
export function encodeSSE(encoder: Pick<Encoder, 'encodeSSE'>, event: BaseEvent): string {
  return DELTA_EVENTS.has(event.type) ? `data: ${JSON.stringify(event)}\n\n` : encoder.encodeSSE(event);
}

/** A sub-agent call as AG-UI sees it: a subagent run and a step. */
interface SubagentRun {
  id: string;
  step: string;
}

/**
 * Turns what a call does into AG-UI events: `RUN_STARTED`; each model turn's text and reasoning as messages of
 * their own; the served agent's tool calls as `TOOL_CALL_START/ARGS/END` and `TOOL_CALL_RESULT`; each sub-agent
 * call as `SUBAGENT_STARTED` and a `STEP_STARTED` named by its path (its tool calls attributed to it), closed
 * when it returns; then `RUN_FINISHED` (its `interrupt` outcome when the call waits for approval) or `RUN_ERROR`.
 */
export class AGUIEncoder implements RunObserver {
  readonly #write: (event: BaseEvent) => unknown;
  readonly #threadId: string;
  readonly #runId: string;
  #decided: Map<string, Decision>;
  /** How many ids this run's events were given (an id is the run's id and this number: a replay gives the same). */
  #ids = 0;
  #started = false;
  #text: string | undefined;
  #reasoning: string | undefined;
  #textSinceTools = false;
  #reasoned = false;
  readonly #subagents = new Map<string, SubagentRun[]>();
  readonly #steps = new Set<string>();

  constructor(
    write: (event: BaseEvent) => unknown,
    threadId: string,
    runId: string,
    decisions: readonly Decision[] = [],
  ) {
    this.#write = write;
    this.#threadId = threadId;
    this.#runId = runId;
    this.#decided = new Map(decisions.map((decision) => [decision.id, decision]));
  }

  #id(kind: string): string {
    return `${this.#runId}:${kind}-${++this.#ids}`;
  }

  /** The run goes on with decisions: the calls they answer were announced by the run that paused. */
  resumed(decisions: readonly Decision[]): void {
    this.#decided = new Map(decisions.map((decision) => [decision.id, decision]));
  }

  #send(event: Record<string, unknown>): void {
    if (!this.#started) {
      this.#started = true;
      this.#write({ type: 'RUN_STARTED', threadId: this.#threadId, runId: this.#runId } as BaseEvent);
    }
    this.#write(event as unknown as BaseEvent);
  }

  text(delta: string): void {
    this.#closeReasoning();
    if (this.#text === undefined) {
      this.#text = this.#id('text');
      this.#send({ type: 'TEXT_MESSAGE_START', messageId: this.#text, role: 'assistant' });
    }
    this.#textSinceTools = true;
    this.#send({ type: 'TEXT_MESSAGE_CONTENT', messageId: this.#text, delta });
  }

  reasoning(delta: string): void {
    this.#closeText();
    if (this.#reasoning === undefined) {
      this.#reasoning = this.#id('reasoning');
      this.#send({ type: 'REASONING_START', messageId: this.#reasoning });
      this.#send({ type: 'REASONING_MESSAGE_START', messageId: this.#reasoning, role: 'reasoning' });
    }
    this.#reasoned = true;
    this.#send({ type: 'REASONING_MESSAGE_CONTENT', messageId: this.#reasoning, delta });
  }

  toolsStarted(path: string, calls: readonly ToolCall[]): void {
    this.#closeText();
    this.#closeReasoning();
    const subagent = path === '' ? undefined : this.#subagentAt(path);
    for (const call of calls) {
      const id = interruptId(path, call);
      // A call resumed by this request's decision was announced by the run that paused.
      if (this.#decided.has(id)) continue;
      this.#toolCall(id, call, subagent?.id);
    }
  }

  toolsEnded(path: string, calls: readonly ToolCall[], results: readonly ToolResultText[]): void {
    const subagent = path === '' ? undefined : this.#subagentAt(path);
    calls.forEach((call, index) => {
      // A frontend tool's result came from the client: it has it already.
      const decided = this.#decided.get(interruptId(path, call));
      if (decided?.approve === true && decided.result !== undefined) return;
      const result = results[index] ?? { text: '' };
      this.#send({
        type: 'TOOL_CALL_RESULT',
        messageId: this.#id('result'),
        toolCallId: interruptId(path, call),
        content: result.text,
        role: 'tool',
        ...(subagent === undefined ? {} : { subagentRunId: subagent.id }),
      });
    });
    if (path === '') this.#textSinceTools = false;
  }

  agentStarted(path: string, name: string, description: string | undefined): void {
    this.#closeText();
    this.#closeReasoning();
    let step = path;
    for (let n = 2; this.#steps.has(step); n++) step = `${path}#${n}`;
    const subagent = { id: this.#id('subagent'), step };
    this.#steps.add(step);
    const open = this.#subagents.get(path);
    if (open === undefined) this.#subagents.set(path, [subagent]);
    else open.push(subagent);
    this.#send({
      type: 'SUBAGENT_STARTED',
      subagentRunId: subagent.id,
      name,
      ...(description === undefined ? {} : { description }),
      metadata: { path },
    });
    this.#send({ type: 'STEP_STARTED', stepName: step });
  }

  agentEnded(path: string, outcome: 'done' | 'failed'): void {
    const open = this.#subagents.get(path);
    const subagent = open?.pop();
    if (subagent === undefined) return;
    if (open!.length === 0) this.#subagents.delete(path);
    this.#endSubagent(subagent, outcome === 'done' ? { type: 'success' } : undefined);
  }

  /**
   * Ends the run with the call's reply: its text when none was streamed, or the calls that wait. Calls of
   * frontend tools end a run that completed (their ids in `pendingToolCallIds`), for the client to answer with
   * tool messages; any other pause is the `interrupt` outcome.
   */
  finish(reply: AgentMessage, snapshot?: unknown): void {
    const interrupts = interruptsOf(reply);
    const asks = interrupts.filter((ask) => ask.kind !== 'client-tool');
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
      const subagent = ask.path === '' ? undefined : this.#subagentAt(ask.path);
      this.#toolCall(ask.id, ask.toolCall, subagent?.id);
    }
    for (const open of this.#subagents.values()) {
      for (const subagent of open.reverse()) {
        const waiting = asks.filter((ask) => ask.path !== '' && this.#subagentAt(ask.path) === subagent);
        this.#endSubagent(
          subagent,
          waiting.length > 0
            ? { type: 'suspended', interruptIds: waiting.map((ask) => ask.id) }
            : { type: 'success' },
        );
      }
    }
    this.#subagents.clear();
    if (snapshot !== undefined) this.#send({ type: 'STATE_SNAPSHOT', snapshot });
    const finished: Record<string, unknown> = {
      type: 'RUN_FINISHED',
      threadId: this.#threadId,
      runId: this.#runId,
    };
    if (asks.length > 0) {
      finished.outcome = {
        type: 'interrupt',
        interrupts: asks.map(
          (ask): AGUIInterrupt => ({
            id: ask.id,
            reason: 'tool_approval',
            message: `${ask.path === '' ? '' : `${ask.path}: `}${ask.toolCall.name} needs approval`,
            toolCallId: ask.id,
            metadata: { kind: ask.kind, path: ask.path, toolCall: ask.toolCall },
          }),
        ),
      };
    } else if (interrupts.length > 0) {
      finished.outcome = { type: 'success', pendingToolCallIds: interrupts.map((ask) => ask.id) };
    } else {
      finished.outcome = { type: 'success' };
      finished.result = typeof reply.content === 'string' ? reply.content : (reply.content ?? null);
    }
    this.#send(finished);
  }

  /** Ends the run with `RUN_ERROR` (what is open is closed first, so the run stays well formed). */
  fail(message: string, code: string): void {
    this.#closeAll(message);
    this.#send({ type: 'RUN_ERROR', message, code });
  }

  /** Ends a run that was cancelled: `RUN_FINISHED` with the `cancelled` outcome. */
  cancelled(): void {
    this.#closeAll('the run was cancelled');
    this.#send({
      type: 'RUN_FINISHED',
      threadId: this.#threadId,
      runId: this.#runId,
      outcome: { type: 'cancelled' },
    });
  }

  #closeAll(message: string): void {
    this.#closeText();
    this.#closeReasoning();
    for (const open of this.#subagents.values())
      for (const subagent of open.reverse()) this.#endSubagent(subagent, undefined, message);
    this.#subagents.clear();
  }

  #toolCall(id: string, call: ToolCall, subagentRunId: string | undefined): void {
    const owner = subagentRunId === undefined ? {} : { subagentRunId };
    const args = call.arguments;
    this.#send({ type: 'TOOL_CALL_START', toolCallId: id, toolCallName: call.name, ...owner });
    this.#send({
      type: 'TOOL_CALL_ARGS',
      toolCallId: id,
      delta: typeof args === 'string' ? args : JSON.stringify(args),
      ...owner,
    });
    this.#send({ type: 'TOOL_CALL_END', toolCallId: id, ...owner });
  }

  #subagentAt(path: string): SubagentRun | undefined {
    // The innermost open sub-agent at this path, else the nearest open one above it.
    for (let at = path; at !== ''; at = at.includes('.') ? at.slice(0, at.lastIndexOf('.')) : '') {
      const open = this.#subagents.get(at);
      if (open !== undefined && open.length > 0) return open.at(-1);
    }
    return undefined;
  }

  #endSubagent(
    subagent: SubagentRun,
    outcome: { type: 'success' } | { type: 'suspended'; interruptIds: string[] } | undefined,
    error?: string,
  ): void {
    this.#send({ type: 'STEP_FINISHED', stepName: subagent.step });
    this.#steps.delete(subagent.step);
    if (outcome === undefined)
      this.#send({
        type: 'SUBAGENT_ERROR',
        subagentRunId: subagent.id,
        message: error ?? 'the sub-agent failed',
      });
    else this.#send({ type: 'SUBAGENT_FINISHED', subagentRunId: subagent.id, outcome });
  }

  #closeText(): void {
    if (this.#text === undefined) return;
    this.#send({ type: 'TEXT_MESSAGE_END', messageId: this.#text });
    this.#text = undefined;
  }

  #closeReasoning(): void {
    if (this.#reasoning === undefined) return;
    this.#send({ type: 'REASONING_MESSAGE_END', messageId: this.#reasoning });
    this.#send({ type: 'REASONING_END', messageId: this.#reasoning });
    this.#reasoning = undefined;
  }
}

/** Reads and checks a `RunAgentInput`; sets the header naming what it ignored. */
function readInput(host: ProtocolHost, body: unknown, reply: FastifyReply): ReadInput {
  if (!isPlainObject(body)) throw badInput('(root)', 'the body must be a RunAgentInput JSON object');
  const { threadId, runId } = body;
  if (typeof threadId !== 'string' || threadId === '')
    throw badInput('threadId', '"threadId" (the session) must be a non-empty string');
  checkSessionId(threadId as SessionId);
  if (typeof runId !== 'string' || runId === '')
    throw badInput('runId', '"runId" must be a non-empty string');
  const messages = body.messages ?? [];
  if (!Array.isArray(messages)) throw badInput('messages', '"messages" must be an array');
  const checked = messages.map((message, index) => {
    if (!isPlainObject(message) || typeof message.role !== 'string' || !ROLES.has(message.role)) {
      throw badInput(
        `messages.${index}.role`,
        `message ${index} has the role ${JSON.stringify(isPlainObject(message) ? message.role : message)}; known roles: ${[...ROLES].join(', ')}`,
      );
    }
    return message as { role: string; content?: unknown } & Record<string, unknown>;
  });
  const ignored: string[] = [];
  const tools = frontendTools(host, body.tools);
  if (tools === null) ignored.push('tools');
  if (Array.isArray(body.context) && body.context.length > 0) ignored.push('context');
  if (isPlainObject(body.state) && Object.keys(body.state).length > 0) ignored.push('state');
  const forwarded = body.forwardedProps;
  if (forwarded !== undefined && forwarded !== null && !isPlainObject(forwarded))
    throw badInput('forwardedProps', '"forwardedProps" must be an object');
  const kwargs: Record<string, unknown> = {};
  let stateSnapshot = false;
  if (isPlainObject(forwarded)) {
    for (const key of Object.keys(forwarded)) {
      if (key === 'stateSnapshot') stateSnapshot = forwarded[key] === true;
      else Object.defineProperty(kwargs, key, { value: forwarded[key], enumerable: true });
    }
  }
  const options = callOptions(host, kwargs, reply, ignored);
  if (tools !== null && tools !== undefined) options.clientTools = tools;
  const resume = body.resume;
  if (resume !== undefined && resume !== null && !Array.isArray(resume))
    throw badInput('resume', '"resume" must be an array of { interruptId, status, payload? }');
  const relevant = checked.filter((message) => message.role !== 'system' && message.role !== 'developer');
  // The results of frontend tools: the tool messages after the last message of another role.
  let answered = relevant.length;
  while (answered > 0 && relevant[answered - 1]!.role === 'tool') answered--;
  const results = relevant.slice(answered).map(toolResultOf);
  if (results.length > 0 && tools === null) {
    throw badInput(
      'messages',
      'a tool message is the newest: frontend tools are not offered to this agent, so there is nothing to answer',
    );
  }
  const conversation = relevant
    .slice(0, answered)
    .filter((message) => message.role === 'user' || message.role === 'assistant');
  const decisions = [...(Array.isArray(resume) ? resume.map(decisionOf) : []), ...results];
  if (decisions.length > 0) {
    const seen = new Set<string>();
    for (const decision of decisions) {
      if (seen.has(decision.id))
        throw badInput('messages', `the tool call ${JSON.stringify(decision.id)} is answered twice`);
      seen.add(decision.id);
    }
    return {
      threadId,
      runId,
      input: [],
      decisions,
      history: historyOf(conversation),
      stateSnapshot,
      options,
    };
  }
  // The newest message: the user's.
  const newest = relevant.at(-1);
  if (newest === undefined || newest.role !== 'user') {
    throw badInput('messages', 'the newest message must be the user\'s (or give "resume" entries)');
  }
  return {
    threadId,
    runId,
    input: [new AgentMessage({ sender: 'user', content: userContent(newest.content) })],
    decisions: [],
    history: historyOf(conversation.slice(0, conversation.lastIndexOf(newest))),
    stateSnapshot,
    options,
  };
}

function historyOf(messages: readonly { role: string; content?: unknown }[]): HistoryEntry[] {
  return messages.map((message) =>
    message.role === 'user'
      ? { role: 'user', text: textOf(message.content) }
      : { role: 'assistant', text: '' },
  );
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isPlainObject(part) && part.type === 'text' ? String(part.text ?? '') : ''))
    .join('');
}

function userContent(content: unknown): string | ContentPart[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badInput('messages', 'a user message needs content');
  const parts: ContentPart[] = [];
  for (const part of content) {
    if (!isPlainObject(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.type === 'image' || part.type === 'document') {
      const source = isPlainObject(part.source) ? part.source : undefined;
      const url =
        source?.type === 'url' && typeof source.value === 'string'
          ? source.value
          : source?.type === 'data' && typeof source.value === 'string'
            ? `data:${String(source.mimeType ?? 'application/octet-stream')};base64,${source.value}`
            : undefined;
      if (url === undefined) throw badInput('messages', `an ${part.type} part needs a url or data source`);
      const safe = remoteSource(url, 'messages');
      const mediaType = typeof source?.mimeType === 'string' ? source.mimeType : undefined;
      if (part.type === 'image') parts.push({ type: 'image', image: safe, mediaType });
      else parts.push({ type: 'file', data: safe, mediaType: mediaType ?? 'application/octet-stream' });
    }
  }
  if (parts.length === 0) throw badInput('messages', 'the user message has no text');
  return parts.every((part) => part.type === 'text')
    ? parts.map((part) => (part as { text: string }).text).join('')
    : parts;
}

/**
 * The frontend tools of a `RunAgentInput` as client tools (OpenAI function specs; the core checks their names
 * against the agent's tools): undefined when none is given, null when given to an agent that offers no model
 * native tools (nothing would see them).
 */
function frontendTools(host: ProtocolHost, given: unknown): OpenAITool[] | null | undefined {
  if (given === undefined || given === null) return undefined;
  if (!Array.isArray(given))
    throw badInput('tools', '"tools" must be an array of { name, description, parameters? }');
  if (given.length === 0) return undefined;
  const agent = host.agent;
  if (!(agent instanceof AgentBase) || !offersTools(agent)) return null;
  return given.map((tool, index) => {
    if (!isPlainObject(tool) || typeof tool.name !== 'string')
      throw badInput(`tools.${index}`, 'a tool needs a "name" (and a "description", "parameters")');
    const description = typeof tool.description === 'string' ? tool.description : '';
    const parameters = tool.parameters ?? { type: 'object', properties: {} };
    return { type: 'function', function: { name: tool.name, description, parameters } } as OpenAITool;
  });
}

/** Whether some agent of the tree asks its model with native tools (where client tools are offered). */
function offersTools(agent: AgentBase): boolean {
  for (const [, node] of agent.namedAgents())
    if ((node as { tools?: unknown }).tools !== undefined) return true;
  return false;
}

/**
 * A tool message as the decision that answers its call: the frontend tool's output (with its error, when it
 * failed), as text.
 */
function toolResultOf(message: Record<string, unknown>, index: number): Decision {
  const id = message.toolCallId;
  if (typeof id !== 'string' || id === '')
    throw badInput(`messages.${index}.toolCallId`, 'a tool message needs "toolCallId": the call it answers');
  const content = message.content;
  if (typeof content !== 'string' && !Array.isArray(content))
    throw badInput(`messages.${index}.content`, 'a tool message needs content: text or parts');
  const text = textOf(content);
  const error = typeof message.error === 'string' && message.error !== '' ? message.error : undefined;
  const result =
    error === undefined
      ? text
      : text === ''
        ? `The tool failed: ${error}`
        : `${text}\n(The tool failed: ${error})`;
  return { id, approve: true, result };
}

/** A resume entry as a decision: `resolved` approves (unless its payload says `approve: false`), `cancelled` declines. */
function decisionOf(entry: unknown, index: number): Decision {
  if (!isPlainObject(entry) || typeof entry.interruptId !== 'string' || entry.interruptId === '')
    throw badInput(`resume.${index}`, 'a resume entry needs "interruptId"');
  const id = entry.interruptId;
  const payload = isPlainObject(entry.payload) ? entry.payload : {};
  const reason = typeof payload.reason === 'string' && payload.reason !== '' ? payload.reason : undefined;
  if (entry.status === 'cancelled')
    return reason === undefined ? { id, approve: false } : { id, approve: false, reason };
  if (entry.status !== 'resolved')
    throw badInput(`resume.${index}.status`, 'a resume entry\'s status is "resolved" or "cancelled"');
  const approve = payload.approve ?? payload.approved ?? true;
  if (typeof approve !== 'boolean')
    throw badInput(`resume.${index}.payload`, '"approve" must be true or false');
  if (!approve) return reason === undefined ? { id, approve: false } : { id, approve: false, reason };
  // A frontend tool's call answered in a resume entry rather than a tool message.
  if (typeof payload.result === 'string') return { id, approve: true, result: payload.result };
  const args = payload.arguments;
  if (args !== undefined && !isPlainObject(args))
    throw badInput(`resume.${index}.payload`, '"arguments" must be an object');
  return args === undefined ? { id, approve: true } : { id, approve: true, arguments: args };
}
