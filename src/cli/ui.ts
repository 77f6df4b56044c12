import type { ServedAgent } from '../distributed/http/server';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runUi}. */
export interface UiOptions {
  port: number;
  token?: string | undefined;
  /** More names the `Host` header may carry. */
  allowedHosts?: readonly string[] | undefined;
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
  process.stdout.write(`lagent ui: ${name}at ${server.pageUrl}\n`);
  const signal = await stopped;
  process.stderr.write(`lagent ui: ${signal}, shutting down\n`);
  await server.close();
}
