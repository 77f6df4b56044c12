import type { FastifyInstance } from 'fastify';
import { ConfigurationError } from '../../schema/errors';
import { errorMessage } from '../../utils/text';
import { type A2AServerOptions, loadA2AServer } from './a2a-server';
import { type AGUIOptions, loadAGUI } from './ag-ui';
import { type OpenAIChatOptions, registerOpenAIChat } from './openai-chat';
import type { ProtocolHost } from './run';
import { registerUIMessageStream, type UIMessageStreamOptions } from './ui-message-stream';

/*
 * Which protocols an `HTTPAgentServer` speaks besides Lagent's own, and the routes of each. The protocols whose
 * libraries are optional peers (AG-UI's encoder, the A2A SDK) load them when the server starts.
 */

/** The protocols an `HTTPAgentServer` can speak besides Lagent's own. */
export type ProtocolName = 'openai' | 'ai-sdk' | 'ag-ui' | 'a2a';

/** Every protocol, in the order `lagent serve --protocols` lists them. */
export const PROTOCOL_NAMES: readonly ProtocolName[] = ['openai', 'ai-sdk', 'ag-ui', 'a2a'];

/** Each protocol on (`true`), off (`false`, or left out of a list) or on with its options. */
export interface ProtocolSettings {
  /** OpenAI chat completions: `POST /v1/chat/completions`, `GET /v1/models`. */
  openai?: boolean | OpenAIChatOptions | undefined;
  /** The AI SDK's UI message stream (`useChat`): `POST /api/chat`. */
  'ai-sdk'?: boolean | UIMessageStreamOptions | undefined;
  /** AG-UI: `POST /ag-ui` (needs `@ag-ui/encoder`). */
  'ag-ui'?: boolean | AGUIOptions | undefined;
  /** A2A: the agent card at `/.well-known/agent-card.json` and JSON-RPC at `/a2a` (needs `@a2a-js/sdk`). */
  a2a?: boolean | A2AServerOptions | undefined;
}

/** The `protocols` option: a list of names, or settings per protocol. */
export type ProtocolsOption = readonly ProtocolName[] | ProtocolSettings;

/** What a server serves: each protocol with its options, and whether they were asked for by name. */
export interface ProtocolPlan {
  enabled: Map<ProtocolName, Record<string, unknown>>;
  /** Given by the user (a missing peer then fails `listen()`), rather than the default (its route answers 501). */
  explicit: boolean;
}

/** Reads the `protocols` option (every protocol when it is undefined). */
export function planProtocols(option: ProtocolsOption | undefined, owner: string): ProtocolPlan {
  const enabled = new Map<ProtocolName, Record<string, unknown>>();
  if (option === undefined) {
    for (const name of PROTOCOL_NAMES) enabled.set(name, {});
    return { enabled, explicit: false };
  }
  if (Array.isArray(option)) {
    for (const name of option) {
      if (!PROTOCOL_NAMES.includes(name as ProtocolName)) throw unknown(owner, name);
      enabled.set(name as ProtocolName, {});
    }
    return { enabled, explicit: true };
  }
  if (option === null || typeof option !== 'object') {
    throw new ConfigurationError({
      message: `${owner}: protocols must be a list of names (${PROTOCOL_NAMES.join(', ')}) or an object of settings`,
    });
  }
  for (const [name, setting] of Object.entries(option)) {
    if (!PROTOCOL_NAMES.includes(name as ProtocolName)) throw unknown(owner, name);
    if (setting === undefined || setting === false) continue;
    if (setting === true) enabled.set(name as ProtocolName, {});
    else if (setting !== null && typeof setting === 'object')
      enabled.set(name as ProtocolName, checkPaths(owner, name, setting as Record<string, unknown>));
    else
      throw new ConfigurationError({
        message: `${owner}: protocols.${name} must be true, false or an object of options`,
      });
  }
  return { enabled, explicit: true };
}

function unknown(owner: string, name: unknown): ConfigurationError {
  return new ConfigurationError({
    message: `${owner}: unknown protocol ${JSON.stringify(name)} (known: ${PROTOCOL_NAMES.join(', ')})`,
  });
}

function checkPaths(owner: string, name: string, setting: Record<string, unknown>): Record<string, unknown> {
  for (const key of ['path', 'prefix']) {
    const value = setting[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !/^\/[\w\-./]*$/.test(value) || value.includes('//')) {
      throw new ConfigurationError({
        message: `${owner}: protocols.${name}.${key} must be a path such as "/api/chat", got ${JSON.stringify(value)}`,
      });
    }
  }
  return setting;
}

/** A protocol ready to register its routes. */
export type ProtocolRoutes = (app: FastifyInstance, host: ProtocolHost) => void;

/**
 * Loads what each enabled protocol needs. A protocol whose optional peer is missing fails here when it was
 * asked for by name; by default its routes answer 501 with the same "install X" message, and a warning says so.
 */
export async function loadProtocols(plan: ProtocolPlan): Promise<ProtocolRoutes[]> {
  const routes: ProtocolRoutes[] = [];
  for (const [name, options] of plan.enabled) {
    switch (name) {
      case 'openai':
        routes.push((app, host) => registerOpenAIChat(app, host, options as OpenAIChatOptions));
        break;
      case 'ai-sdk':
        routes.push((app, host) => registerUIMessageStream(app, host, options as UIMessageStreamOptions));
        break;
      case 'ag-ui':
        routes.push(await orMissing(plan, name, () => loadAGUI(options as AGUIOptions)));
        break;
      case 'a2a':
        routes.push(await orMissing(plan, name, () => loadA2AServer(options as A2AServerOptions)));
        break;
    }
  }
  return routes;
}

async function orMissing(
  plan: ProtocolPlan,
  name: ProtocolName,
  load: () => Promise<ProtocolRoutes & { paths: readonly string[] }>,
): Promise<ProtocolRoutes> {
  try {
    return await load();
  } catch (error) {
    if (plan.explicit || !(error instanceof ConfigurationError)) throw error;
    process.emitWarning(`HTTPAgentServer does not serve ${name}: ${errorMessage(error)}`, {
      code: 'LAGENT_PROTOCOL_UNAVAILABLE',
    });
    const paths = (error as { paths?: readonly string[] }).paths ?? [];
    return (app) => {
      for (const path of paths) {
        app.all(path, (_request, reply) => {
          reply
            .code(501)
            .type('application/json; charset=utf-8')
            .send(JSON.stringify({ detail: error.message, error: 'NotImplemented' }));
        });
      }
    };
  }
}
