import type { AgentBase } from '../agents/agent-base';
import { DURABLE } from '../agents/lifecycle/durable';
import { isLoopbackHost } from '../core/request-guard';
import type { ServedAgent } from '../distributed/http/server';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runServe}. */
export interface ServeOptions {
  host: string;
  port: number;
  token?: string | undefined;
  /** More names the `Host` header may carry (HTTPAgentServer's `allowedHosts`). */
  allowedHosts?: readonly string[] | undefined;
  /** Origins whose web pages may call the server (HTTPAgentServer's `allowedOrigins`). */
  allowedOrigins?: readonly string[] | undefined;
}

/**
 * Throws a {@link CliError} for options `lagent serve` refuses before loading the agent: a host other than a
 * loopback one without a token, where anybody who can reach the port could run the agent.
 */
export function checkServeOptions(options: ServeOptions): void {
  if (!options.token && !isLoopbackHost(options.host)) {
    throw new CliError(
      `refusing to serve on ${options.host} without a token: anybody who can reach it could run the agent. ` +
        'Set --token (or LAGENT_TOKEN), or serve on a loopback host such as 127.0.0.1',
    );
  }
}

/**
 * `lagent serve`: serves the agent with `HTTPAgentServer` (Lagent's HTTP protocol) until SIGINT or SIGTERM,
 * then closes the server (calls in progress finish) and the agent's tools. A host other than a loopback one
 * needs a token: without one, anybody who can reach the port could run the agent.
 */
export async function runServe(loaded: LoadedAgent, options: ServeOptions): Promise<void> {
  checkServeOptions(options);
  const { HTTPAgentServer } = await import('../distributed/http/server');
  let server: InstanceType<typeof HTTPAgentServer>;
  try {
    server = new HTTPAgentServer({
      agent: loaded.agent as ServedAgent,
      host: options.host,
      port: options.port,
      token: options.token,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
    });
  } catch (error) {
    throw new CliError(messageOf(error), { cause: error });
  }
  const stopped = untilStopped();
  let url: string;
  try {
    url = await server.listen();
  } catch (error) {
    throw new CliError(`cannot listen on ${options.host}:${options.port}: ${messageOf(error)}`, {
      cause: error,
    });
  }
  const name = loaded.agent.name ? `${loaded.agent.name} ` : '';
  process.stdout.write(
    `lagent serve: ${name}listening on ${url}${options.token ? ' (token required)' : ''}\n`,
  );
  // Calls a previous run left unfinished (it was killed) are recovered while the server answers.
  void recoverUnfinished(loaded.agent);
  const signal = await stopped;
  process.stderr.write(`lagent serve: ${signal}, shutting down\n`);
  await server.close();
}

/**
 * Recovers every durable call of the agent's journal namespace that a process left unfinished (a server
 * killed mid-call), as `agent.recoverAll()` does, and says on stdout how many (on stderr, what failed). A call
 * still held by a process that died is taken over when its lease runs out (`--lease-ms`).
 */
export async function recoverUnfinished(agent: unknown, command = 'serve'): Promise<void> {
  const durable = agent as AgentBase;
  if (typeof durable?.recoverAll !== 'function' || durable[DURABLE] === undefined) return;
  try {
    const sessions = await durable.recoverAll();
    const calls = sessions.reduce((sum, session) => sum + session.replies.length, 0);
    const failed = sessions.filter((session) => session.error !== undefined);
    if (sessions.length > 0) {
      process.stdout.write(
        `lagent ${command}: recovered ${calls} unfinished call${calls === 1 ? '' : 's'} of ${sessions.length - failed.length} session${sessions.length - failed.length === 1 ? '' : 's'}\n`,
      );
    }
    for (const session of failed) {
      process.stderr.write(
        `lagent ${command}: recovering session ${JSON.stringify(session.sessionId)} failed: ${messageOf(session.error)}\n`,
      );
    }
  } catch (error) {
    process.stderr.write(`lagent ${command}: recovering unfinished calls failed: ${messageOf(error)}\n`);
  }
}
