import { createRequire } from 'node:module';
import { errorMessage } from '../../../utils/text';

/**
 * OpenTelemetry spans for agent calls, model calls and tool calls, following the GenAI semantic conventions
 * (`invoke_agent`, `chat`, `execute_tool`). `@opentelemetry/api` is an optional peer and never imported up
 * front: tracing is on only when the API is installed and a tracer provider has been registered with it,
 * which the API records on a global. Without one, each call pays one property read of that global.
 */

/** The slice of `@opentelemetry/api` used here. */
interface OTelApi {
  trace: {
    getTracer(name: string, version?: string): Tracer;
    setSpan(context: unknown, span: Span): unknown;
  };
  context: { active(): unknown };
}

interface Tracer {
  startSpan(name: string, options: { kind: number; attributes: Attributes }, context?: unknown): Span;
}

type Attributes = Record<string, string | number | boolean | string[]>;

/** A started span (the slice of OpenTelemetry's `Span` used here). */
export interface Span {
  setAttribute(key: string, value: string | number | boolean | string[]): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): unknown;
  addEvent?(name: string, attributes?: Attributes): unknown;
  end(): void;
}

/** OpenTelemetry's API records its global registrations here, for major version 1. */
const GLOBAL_KEY = Symbol.for('opentelemetry.js.api.1');
const SPAN_KIND_INTERNAL = 0;
const SPAN_KIND_CLIENT = 2;
const STATUS_ERROR = 2;
const VERSION = '0.1.0';

let api: OTelApi | null | undefined;
let tracerOf: { provider: unknown; tracer: Tracer } | undefined;

function loadApi(): OTelApi | null {
  if (api !== undefined) return api;
  try {
    const from: unknown = import.meta.url;
    const base = typeof from === 'string' && from.startsWith('file:') ? from : __filename;
    api = createRequire(base)('@opentelemetry/api') as OTelApi;
  } catch {
    api = null; // a provider was registered through a copy of the API this package cannot load
  }
  return api;
}

/** The tracer to use now, or undefined when no tracer provider is registered (the common, free case). */
export function activeTracer(): Tracer | undefined {
  const registered = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[GLOBAL_KEY]?.trace;
  if (registered === undefined) return undefined;
  if (tracerOf?.provider === registered) return tracerOf.tracer;
  const otel = loadApi();
  if (!otel) return undefined;
  tracerOf = { provider: registered, tracer: otel.trace.getTracer('lagent-ts', VERSION) };
  return tracerOf.tracer;
}

/** Starts a span as a child of `parent` (a span of ours), else of OpenTelemetry's active context. */
function start(
  tracer: Tracer,
  name: string,
  kind: number,
  attributes: Attributes,
  parent: Span | undefined,
): Span {
  const otel = api!;
  const context = parent ? otel.trace.setSpan(otel.context.active(), parent) : otel.context.active();
  return tracer.startSpan(name, { kind, attributes }, context);
}

/** An `invoke_agent` span for one agent call. */
export function startAgentSpan(
  tracer: Tracer,
  agentName: string,
  sessionId: unknown,
  parent: Span | undefined,
): Span {
  return start(
    tracer,
    `invoke_agent ${agentName}`,
    SPAN_KIND_INTERNAL,
    {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': agentName,
      'gen_ai.conversation.id': String(sessionId),
    },
    parent,
  );
}

/** A `chat` span for one model call; `model` is the model name when the client has one. */
export function startChatSpan(tracer: Tracer, model: string | undefined, parent: Span | undefined): Span {
  const attributes: Attributes = { 'gen_ai.operation.name': 'chat' };
  if (model) attributes['gen_ai.request.model'] = model;
  return start(tracer, model ? `chat ${model}` : 'chat', SPAN_KIND_CLIENT, attributes, parent);
}

/** An `execute_tool` span for one tool call. */
export function startToolSpan(
  tracer: Tracer,
  toolName: string,
  callId: string | undefined,
  parent: Span | undefined,
): Span {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': toolName,
    'gen_ai.tool.type': 'function',
  };
  if (callId) attributes['gen_ai.tool.call.id'] = callId;
  return start(tracer, `execute_tool ${toolName}`, SPAN_KIND_INTERNAL, attributes, parent);
}

/** Ends a span, marking it failed with `error` when there is one. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    const message = errorMessage(error);
    span.recordException(error instanceof Error ? error : message);
    span.setStatus({ code: STATUS_ERROR, message });
    span.setAttribute('error.type', error instanceof Error ? error.name : 'Error');
  }
  span.end();
}
