import type { ServedAgent } from '../distributed/http/server';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runServe}. */
export interface ServeOptions {
  host: string;
  port: number;
  token?: string | undefined;
}

/**
 * `lagent serve`: serves the agent with `HTTPAgentServer` (Lagent's HTTP protocol) until SIGINT or SIGTERM,
 * then closes the server (calls in progress finish) and the agent's tools.
 */
export async function runServe(loaded: LoadedAgent, options: ServeOptions): Promise<void> {
  const { HTTPAgentServer } = await import('../distributed/http/server');
  const stopped = untilStopped();
  const server = new HTTPAgentServer({
    agent: loaded.agent as ServedAgent,
    host: options.host,
    port: options.port,
    token: options.token,
  });
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
