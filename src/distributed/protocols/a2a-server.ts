import { randomUUID } from 'node:crypto';
import type {
  Message as A2AMessage,
  Part as A2APart,
  Task as A2ATask,
  AgentCard,
  AgentSkill,
  ListTasksRequest,
  ListTasksResponse,
  TaskState,
} from '@a2a-js/sdk';
import type {
  AgentExecutor,
  ExecutionEventBus,
  RequestContext,
  ServerCallContext,
  TaskStore,
} from '@a2a-js/sdk/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { AgentMessage } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import type { ContentPart } from '../../schema/content-parts';
import { missingPeer } from '../../schema/errors';
import { type Decision, interruptsOf, resumeWith } from '../../schema/interrupts';
import { isPlainObject } from '../../utils/is';
import { checkSessionId } from '../http/protocol';
import { requestResource } from '../http/request-resource';
import type { ProtocolRoutes } from './register';
import { answerOf, checkDecisions, clientMessage, isCallersMistake, remoteSource } from './request';
import { type ProtocolHost, type RunObserver, runCall, type ToolResultText } from './run';

/*
 * A2A 1.0 (`@a2a-js/sdk`): the agent card at `/.well-known/agent-card.json` and the JSON-RPC endpoint it names
 * (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, and their A2A 0.3 names `message/send`,
 * `message/stream`, `tasks/get`, `tasks/cancel`), answered by the SDK's request handler over an executor that
 * calls the agent. A task is one call on a session (`contextId` is the session id); a call that pauses for
 * approval leaves its task `input-required`, the calls that wait as data parts of its status message, and the
 * next message on the task (a data part `{ decisions: [...] }`) resumes it.
 */

/** Options of the A2A routes. */
export interface A2AServerOptions {
  /** The JSON-RPC endpoint. @default '/a2a' */
  path?: string | undefined;
  /** The card's `version`. @default '1.0.0' */
  version?: string | undefined;
  /** The card's `description`. @default the agent's `description` */
  description?: string | undefined;
  /** Tasks kept (the least recently updated go first). @default 10_000 */
  maxTasks?: number | undefined;
}

/** The well-known path of the agent card. */
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

const STATE = {
  submitted: 1,
  working: 2,
  completed: 3,
  failed: 4,
  canceled: 5,
  inputRequired: 6,
} as const;
const ROLE_AGENT = 2;
const JSON_TYPE = 'application/json; charset=utf-8';
/** Where a request's `resourceId` rides in the SDK's call context. */
const RESOURCE_STATE = 'lagent-ts.resourceId';
const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);

interface ServerModule {
  DefaultRequestHandler: new (card: AgentCard, store: TaskStore, executor: AgentExecutor) => unknown;
  JsonRpcTransportHandler: new (handler: unknown) => JsonRpcHandler;
  defaultServerCallContextBuilder: (options: {
    extensions: unknown;
    user: unknown;
    headers: unknown;
    requestedVersion: string | undefined;
  }) => ServerCallContext;
  UnauthenticatedUser: new () => unknown;
  AgentEvent: {
    task(task: A2ATask): unknown;
    statusUpdate(update: unknown): unknown;
    artifactUpdate(update: unknown): unknown;
  };
}
interface JsonRpcHandler {
  handle(body: unknown, context: ServerCallContext): Promise<unknown>;
}
interface CoreModule {
  AgentCard: { toJSON(card: AgentCard): unknown };
  Extensions: { parseServiceParameter(value: string | undefined): unknown };
}
interface CompatModule {
  LegacyJsonRpcTransportHandler: new (handler: unknown) => JsonRpcHandler;
}

/** Loads `@a2a-js/sdk` (an optional peer) and gives the routes. */
export async function loadA2AServer(
  options: A2AServerOptions = {},
): Promise<ProtocolRoutes & { paths: string[] }> {
  const path = options.path ?? '/a2a';
  let server: ServerModule;
  let core: CoreModule;
  let compat: CompatModule;
  try {
    [server, core, compat] = (await Promise.all([
      import('@a2a-js/sdk/server'),
      import('@a2a-js/sdk'),
      import('@a2a-js/sdk/compat/v0_3/server'),
    ])) as unknown as [ServerModule, CoreModule, CompatModule];
  } catch (error) {
    throw Object.assign(missingPeer(['@a2a-js/sdk'], 'the A2A routes', error), {
      paths: [path, AGENT_CARD_PATH],
    });
  }
  return Object.assign(
    (app: FastifyInstance, host: ProtocolHost) =>
      registerA2A(app, host, { ...options, path }, server, core, compat),
    { paths: [path, AGENT_CARD_PATH] },
  );
}

function registerA2A(
  app: FastifyInstance,
  host: ProtocolHost,
  options: A2AServerOptions & { path: string },
  server: ServerModule,
  core: CoreModule,
  compat: CompatModule,
): void {
  const executor = new LagentExecutor(host, server, options.maxTasks ?? 10_000);
  const handler = new server.DefaultRequestHandler(
    agentCard(host, options, options.path),
    new BoundedTaskStore(options.maxTasks ?? 10_000),
    executor,
  );
  const rpc = new server.JsonRpcTransportHandler(handler);
  const legacyRpc = new compat.LegacyJsonRpcTransportHandler(handler);
  const user = new server.UnauthenticatedUser();

  // The card is public, as A2A discovery needs: it names the agent, its tools and how to authenticate.
  app.get(AGENT_CARD_PATH, { config: { public: true } }, (request, reply) => {
    const base = `http://${request.headers.host ?? '127.0.0.1'}`;
    const card = agentCard(host, options, `${base}${options.path}`);
    const legacy = isLegacy(request.headers['a2a-version']);
    reply
      .type(JSON_TYPE)
      .header('vary', 'A2A-Version')
      .header('cache-control', 'no-cache')
      .send(JSON.stringify(legacy ? legacyCard(card, host) : core.AgentCard.toJSON(card)));
  });

  app.post(options.path, async (request, reply) => {
    const body = request.body;
    const version = header(request, 'a2a-version');
    const legacy = isLegacy(version);
    const id =
      isPlainObject(body) && (typeof body.id === 'string' || typeof body.id === 'number') ? body.id : null;
    try {
      await checkSend(host, body);
    } catch (error) {
      const answer = answerOf(host, error);
      reply
        .code(answer.status)
        .type(JSON_TYPE)
        .send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32602, message: answer.message } }));
      return;
    }
    const context = server.defaultServerCallContextBuilder({
      extensions: core.Extensions.parseServiceParameter(header(request, 'a2a-extensions')),
      user,
      headers: request.headers,
      requestedVersion: version,
    });
    // The server's resourceId for this request, for the task's call (the executor sees the context, not it).
    const resourceId = requestResource(request.raw);
    if (resourceId !== undefined) context.state.set(RESOURCE_STATE, resourceId);
    let result: unknown;
    try {
      result = await (legacy ? legacyRpc : rpc).handle(body as Record<string, unknown>, context);
    } catch (error) {
      host.onError(error, { route: 'a2a', sessionId: undefined });
      reply
        .code(500)
        .type(JSON_TYPE)
        .send(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            error: { code: -32603, message: clientMessage(host, error) },
          }),
        );
      return;
    }
    if (result === null || typeof result !== 'object' || !(Symbol.asyncIterator in result)) {
      reply.type(JSON_TYPE).send(JSON.stringify(result));
      return;
    }
    await relay(reply, result as AsyncGenerator<unknown>, id);
  });
}

/** Writes a JSON-RPC stream as server-sent events; a client that leaves stops reading it (the task goes on). */
async function relay(reply: FastifyReply, stream: AsyncGenerator<unknown>, id: unknown): Promise<void> {
  let first: IteratorResult<unknown>;
  try {
    first = await stream.next();
  } catch (error) {
    reply
      .type(JSON_TYPE)
      .send(
        JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: (error as Error).message } }),
      );
    return;
  }
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  let gone = false;
  const onClose = () => {
    if (!raw.writableFinished) gone = true;
  };
  raw.once('close', onClose);
  try {
    if (!first.done) raw.write(`data: ${JSON.stringify(first.value)}\n\n`);
    if (!first.done) {
      for (;;) {
        if (gone) {
          await stream.return(undefined);
          break;
        }
        const step = await stream.next();
        if (step.done) break;
        raw.write(`data: ${JSON.stringify(step.value)}\n\n`);
      }
    }
  } catch (error) {
    if (!gone)
      raw.write(
        `event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: (error as Error).message } })}\n\n`,
      );
  } finally {
    raw.off('close', onClose);
    if (!gone) raw.end();
  }
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** A2A 0.3 clients send no version header (or `0.3`). */
function isLegacy(version: string | string[] | undefined): boolean {
  const value = Array.isArray(version) ? version[0] : version;
  return value === undefined || value === '' || value.startsWith('0.3');
}

/**
 * Checks a send before the SDK sees it: decisions (a data part `{ decisions }`) must answer what the session
 * waits for, and the context id must be a session id this server takes. Throws a 4xx error otherwise.
 */
async function checkSend(host: ProtocolHost, body: unknown): Promise<void> {
  if (!isPlainObject(body) || typeof body.method !== 'string' || !SEND_METHODS.has(body.method)) return;
  const params = isPlainObject(body.params) ? body.params : undefined;
  const message = params !== undefined && isPlainObject(params.message) ? params.message : undefined;
  if (message === undefined) return;
  const contextId = typeof message.contextId === 'string' ? message.contextId : undefined;
  if (contextId !== undefined) checkSessionId(contextId);
  const decisions = decisionsOfParts(Array.isArray(message.parts) ? message.parts : []);
  if (decisions === undefined) return;
  if (contextId === undefined) await checkDecisions(host, `a2a:${randomUUID()}`, decisions);
  else await checkDecisions(host, contextId, decisions);
}

/** The decisions a message's data parts carry (`{ decisions: [...] }`), in either protocol version's shape. */
function decisionsOfParts(parts: readonly unknown[]): Decision[] | undefined {
  for (const part of parts) {
    if (!isPlainObject(part)) continue;
    const data =
      part.data ??
      (isPlainObject(part.content) && part.content.$case === 'data' ? part.content.value : undefined);
    if (isPlainObject(data) && Array.isArray(data.decisions))
      return resumeWith(data.decisions as Decision[]).formatted!.decisions;
  }
  return undefined;
}

/** The card: the agent, a skill per tool of its tree, streaming, and the bearer scheme when the server has a token. */
function agentCard(host: ProtocolHost, options: A2AServerOptions, url: string): AgentCard {
  const name = host.agent.name ?? 'agent';
  const description =
    options.description ??
    (host.agent as { description?: unknown }).description ??
    `${name}, an agent served by lagent-ts`;
  const bearer = host.hasToken;
  const io = ['text/plain', 'application/json'];
  return {
    name,
    description: String(description),
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version: options.version ?? '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: bearer
      ? {
          bearer: {
            scheme: {
              $case: 'httpAuthSecurityScheme',
              value: { description: "the server's token", scheme: 'Bearer', bearerFormat: '' },
            },
          },
        }
      : {},
    securityRequirements: bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: io,
    defaultOutputModes: io,
    skills: skillsOf(host, String(description)),
    signatures: [],
  } as AgentCard;
}

function skillsOf(host: ProtocolHost, description: string): AgentSkill[] {
  const name = host.agent.name ?? 'agent';
  const skill = (id: string, title: string, text: string, tags: string[]): AgentSkill => ({
    id,
    name: title,
    description: text,
    tags,
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  });
  const skills = [skill(name, name, description, ['agent'])];
  const seen = new Set([name]);
  const agent = host.agent;
  const nodes = agent instanceof AgentBase ? [...agent.namedAgents()].map(([, node]) => node) : [agent];
  for (const node of nodes) {
    const executor = (node as { executor?: { toOpenAITools?: () => unknown[] } }).executor;
    if (typeof executor?.toOpenAITools !== 'function') continue;
    for (const tool of executor.toOpenAITools() as { function?: { name?: string; description?: string } }[]) {
      const toolName = tool.function?.name;
      if (typeof toolName !== 'string' || seen.has(toolName)) continue;
      seen.add(toolName);
      skills.push(skill(toolName, toolName, tool.function?.description ?? toolName, ['tool']));
    }
  }
  return skills;
}

/** The card in A2A 0.3's shape, for clients that ask without a version (its 1.0 interfaces embedded). */
function legacyCard(card: AgentCard, host: ProtocolHost): Record<string, unknown> {
  const url = card.supportedInterfaces[0]!.url;
  return {
    protocolVersion: '0.3.0',
    name: card.name,
    description: card.description,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    supportedInterfaces: card.supportedInterfaces,
    version: card.version,
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: skill.tags,
    })),
    ...(host.hasToken
      ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, security: [{ bearer: [] }] }
      : {}),
  };
}

function textPart(text: string): A2APart {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function dataPart(value: unknown): A2APart {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

/**
 * Runs the agent for the SDK's request handler: one call per task turn, on the session named by `contextId`;
 * the reply as the task's artifact (streamed as it grows), tool and sub-agent progress as `working` status
 * messages, a pause as `input-required`.
 */
class LagentExecutor implements AgentExecutor {
  readonly #host: ProtocolHost;
  readonly #sdk: ServerModule;
  readonly #running = new Map<string, AbortController>();
  /** The context of each task left waiting for input, to cancel it (bounded like the task store). */
  readonly #waiting = new Map<string, string>();
  readonly #maxWaiting: number;

  constructor(host: ProtocolHost, sdk: ServerModule, maxWaiting: number) {
    this.#host = host;
    this.#sdk = sdk;
    this.#maxWaiting = maxWaiting;
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const controller = this.#running.get(taskId);
    if (controller !== undefined) {
      controller.abort(new Error('the task was cancelled'));
      return;
    }
    const contextId = this.#waiting.get(taskId);
    this.#waiting.delete(taskId);
    bus.publish(this.#status(taskId, contextId ?? '', STATE.canceled) as never);
  };

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = context;
    const message = context.userMessage;
    const publish = (event: unknown) => bus.publish(event as never);
    const task: A2ATask = context.task ?? {
      id: taskId,
      contextId,
      status: {
        state: STATE.submitted as TaskState,
        message: undefined,
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: [message],
      metadata: undefined,
    };
    publish(this.#sdk.AgentEvent.task(task));
    this.#waiting.delete(taskId);
    const host = this.#host;
    let input: AgentMessage[];
    let options: Record<string, unknown>;
    try {
      checkSessionId(contextId);
      const read = readMessage(message);
      input = read.decisions !== undefined ? [resumeWith(read.decisions)] : [read.message];
      const metadata = { ...context.request.metadata, ...message.metadata };
      options = host.callers.read(metadata).options;
      const resourceId = context.context?.state.get(RESOURCE_STATE);
      if (typeof resourceId === 'string') options.resourceId = resourceId;
    } catch (error) {
      publish(this.#status(taskId, contextId, STATE.failed, [textPart(clientMessage(host, error))]));
      return;
    }
    publish(this.#status(taskId, contextId, STATE.working));
    const controller = new AbortController();
    this.#running.set(taskId, controller);
    const end = host.begin(controller, contextId);
    const artifactId = randomUUID();
    let sent = 0;
    const artifact = (text: string, last: boolean) => {
      publish(
        this.#sdk.AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId,
            name: 'reply',
            description: '',
            parts: [textPart(text)],
            metadata: undefined,
            extensions: [],
          },
          append: sent++ > 0,
          lastChunk: last,
          metadata: undefined,
        }),
      );
    };
    // Text that arrives together goes out as one artifact update: the SDK stores the task at every event (with
    // all its parts so far), so one event per chunk would cost time quadratic in the reply's length. Deltas are
    // held only until the event loop turns (a model that streams slowly has each of its chunks sent at once).
    let pending = '';
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (pending === '') return;
      const text = pending;
      pending = '';
      artifact(text, false);
    };
    const progress = (data: Record<string, unknown>) => {
      flush();
      publish(this.#status(taskId, contextId, STATE.working, [dataPart(data)]));
    };
    const observer: RunObserver = {
      text: (delta) => {
        pending += delta;
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      },
      reasoning: () => {},
      toolsStarted: (path: string, calls: readonly ToolCall[]) =>
        progress({ event: 'toolStart', path, toolCalls: calls }),
      toolsEnded: (path: string, calls: readonly ToolCall[], results: readonly ToolResultText[]) =>
        progress({ event: 'toolEnd', path, toolCalls: calls, results }),
      agentStarted: (path, name) => progress({ event: 'agentStart', path, name }),
      agentEnded: (path, outcome) => progress({ event: 'agentEnd', path, outcome }),
    };
    try {
      const reply = await runCall(host, {
        sessionId: contextId,
        input,
        options,
        signal: controller.signal,
        observer,
      });
      flush();
      const interrupts = interruptsOf(reply);
      if (interrupts.length > 0) {
        if (sent > 0) artifact('', true);
        this.#waiting.set(taskId, contextId);
        if (this.#waiting.size > this.#maxWaiting) this.#waiting.delete(this.#waiting.keys().next().value!);
        publish(
          this.#status(taskId, contextId, STATE.inputRequired, [
            textPart(typeof reply.content === 'string' ? reply.content : 'Waiting for approval'),
            ...interrupts.map((ask) => dataPart({ interrupt: ask })),
          ]),
        );
        return;
      }
      if (sent === 0)
        artifact(typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content), true);
      else artifact('', true);
      // What the call spent, for a caller that gave a budget (an A2AAgent charges its own budget with it).
      const usage = (reply.extraInfo as { usage?: unknown } | null)?.usage;
      publish(
        this.#status(
          taskId,
          contextId,
          STATE.completed,
          undefined,
          usage === undefined ? undefined : { usage },
        ),
      );
    } catch (error) {
      flush();
      if (controller.signal.aborted) {
        publish(this.#status(taskId, contextId, STATE.canceled));
        return;
      }
      if (!isCallersMistake(error)) host.onError(error, { route: 'a2a', sessionId: contextId });
      const answer = answerOf(host, error);
      publish(
        this.#status(taskId, contextId, STATE.failed, [
          textPart(answer.message),
          ...(answer.refusal === undefined ? [] : [dataPart(answer.refusal)]),
        ]),
      );
    } finally {
      this.#running.delete(taskId);
      end();
    }
  };

  #status(
    taskId: string,
    contextId: string,
    state: number,
    parts?: A2APart[],
    metadata?: Record<string, unknown>,
  ): unknown {
    const message: A2AMessage | undefined =
      parts === undefined
        ? undefined
        : {
            messageId: randomUUID(),
            contextId,
            taskId,
            role: ROLE_AGENT as A2AMessage['role'],
            parts,
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          };
    return this.#sdk.AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state: state as TaskState, message, timestamp: new Date().toISOString() },
      metadata,
    });
  }
}

/** An A2A message as the agent's input: its text and files, or the decisions it carries. */
function readMessage(message: A2AMessage): { message: AgentMessage; decisions?: Decision[] | undefined } {
  const parts: ContentPart[] = [];
  for (const part of message.parts ?? []) {
    const content = part.content;
    if (content === undefined) continue;
    switch (content.$case) {
      case 'text':
        parts.push({ type: 'text', text: content.value });
        break;
      case 'data': {
        const value = content.value;
        if (isPlainObject(value) && Array.isArray(value.decisions))
          return {
            message: new AgentMessage({ content: '' }),
            decisions: resumeWith(value.decisions as Decision[]).formatted!.decisions,
          };
        parts.push({ type: 'text', text: JSON.stringify(value) });
        break;
      }
      case 'url': {
        const source = remoteSource(content.value, 'parts');
        if (part.mediaType.startsWith('image/'))
          parts.push({ type: 'image', image: source, mediaType: part.mediaType });
        else
          parts.push({
            type: 'file',
            data: source,
            mediaType: part.mediaType || 'application/octet-stream',
            ...(part.filename ? { filename: part.filename } : {}),
          });
        break;
      }
      case 'raw': {
        const mediaType = part.mediaType || 'application/octet-stream';
        const url = `data:${mediaType};base64,${Buffer.from(content.value).toString('base64')}`;
        if (mediaType.startsWith('image/')) parts.push({ type: 'image', image: url, mediaType });
        else
          parts.push({
            type: 'file',
            data: url,
            mediaType,
            ...(part.filename ? { filename: part.filename } : {}),
          });
        break;
      }
    }
  }
  const content = parts.every((part) => part.type === 'text')
    ? parts.map((part) => (part as { text: string }).text).join('\n')
    : parts;
  return { message: new AgentMessage({ sender: 'user', content }) };
}

/** The SDK's in-memory task store, bounded: past `max` tasks, the least recently saved go. */
class BoundedTaskStore implements TaskStore {
  readonly #max: number;
  readonly #tasks = new Map<string, A2ATask>();

  constructor(max: number) {
    this.#max = max;
  }

  async load(taskId: string): Promise<A2ATask | undefined> {
    const task = this.#tasks.get(taskId);
    return task === undefined ? undefined : structuredClone(task);
  }

  async save(task: A2ATask): Promise<void> {
    this.#tasks.delete(task.id);
    this.#tasks.set(task.id, structuredClone(task));
    while (this.#tasks.size > this.#max) this.#tasks.delete(this.#tasks.keys().next().value!);
  }

  async list(params: ListTasksRequest): Promise<ListTasksResponse> {
    let tasks = [...this.#tasks.values()].reverse();
    if (params.contextId) tasks = tasks.filter((task) => task.contextId === params.contextId);
    const pageSize = params.pageSize && params.pageSize > 0 ? params.pageSize : 50;
    const page = tasks.slice(0, pageSize).map((task) => {
      const copy = structuredClone(task);
      if (!params.includeArtifacts) copy.artifacts = [];
      return copy;
    });
    return { tasks: page, nextPageToken: '', pageSize, totalSize: tasks.length };
  }
}
