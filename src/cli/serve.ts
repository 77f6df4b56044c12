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
  const signal = await stopped;
  process.stderr.write(`lagent serve: ${signal}, shutting down\n`);
  await server.close();
}
