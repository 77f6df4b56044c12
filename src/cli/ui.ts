import { AgentBase } from '../agents/agent-base';
import type { ServedAgent } from '../distributed/http/server';
import type { ProtocolName } from '../distributed/protocols/register';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runUi}. */
export interface UiOptions {
  port: number;
  token?: string | undefined;
  /** More names the `Host` header may carry. */
  allowedHosts?: readonly string[] | undefined;
  /** The protocols served besides Lagent's own (`--protocols`); undefined: all of them. */
  protocols?: readonly ProtocolName[] | undefined;
}

/**
 * `lagent ui`: serves a web page on 127.0.0.1 that chats with the agent (streamed), draws its tree live from
 * its events, answers interrupts, and shows, downloads and loads each session's memories; until SIGINT or
 * SIGTERM. Prints the page's URL with its secret (the `--token` given, else one made now) in the fragment: every
 * request needs the secret, so no other local process or user can read the sessions or approve a tool call.
 */
export async function runUi(loaded: LoadedAgent, options: UiOptions): Promise<void> {
  const { UIServer } = await import('../ui/server');
  let server: InstanceType<typeof UIServer>;
  try {
    server = new UIServer({
      agent: loaded.agent as ServedAgent,
      host: '127.0.0.1',
      port: options.port,
      token: options.token,
      allowedHosts: options.allowedHosts,
      protocols: options.protocols,
    });
  } catch (error) {
    throw new CliError(messageOf(error), { cause: error });
  }
  const stopped = untilStopped();
  try {
    await server.listen();
  } catch (error) {
    throw new CliError(`cannot listen on 127.0.0.1:${options.port}: ${messageOf(error)}`, { cause: error });
  }
  const name = loaded.agent.name ? `${loaded.agent.name} ` : '';
  const { protocolsLine } = await import('./serve');
  process.stdout.write(
    `lagent ui: ${name}at ${server.pageUrl}\n${protocolsLine('lagent ui', options.protocols)}`,
  );
  if (fromAnotherCopy(loaded.agent)) {
    process.stderr.write(
      "lagent ui: the agent was built with another copy of lagent-ts than this lagent: chat, memories and approvals work, but the agent tree, its live events and the session list need the same copy (run the lagent of the agent's project: npx lagent ui ...)\n",
    );
  }
  const signal = await stopped;
  process.stderr.write(`lagent ui: ${signal}, shutting down\n`);
  await server.close();
}

/**
 * Whether the agent is an agent of another copy of lagent-ts: not of this copy's classes, but with their
 * `namedAgents()` (what every agent of lagent-ts has).
 */
function fromAnotherCopy(agent: object): boolean {
  return (
    !(agent instanceof AgentBase) && typeof (agent as { namedAgents?: unknown }).namedAgents === 'function'
  );
}
