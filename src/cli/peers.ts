import { missingPeer } from '../schema/errors';
import { CliError } from './errors';

/**
 * The optional peers a command needs, loaded before the agent is: a missing one stops the command at once
 * with `install X to use lagent ui (npm install X)`, naming the command the user typed rather than the class
 * deep inside that would fail later.
 */
export const COMMAND_PEERS = {
  serve: ['fastify'],
  ui: ['fastify'],
  worker: ['bullmq', 'ioredis'],
} as const satisfies Record<string, readonly string[]>;

/** Loads the peers `command` needs; throws a {@link CliError} saying what to install when one is missing. */
export async function requirePeers(command: keyof typeof COMMAND_PEERS): Promise<void> {
  const packages = COMMAND_PEERS[command];
  for (const name of packages) {
    try {
      await import(name);
    } catch (error) {
      const missing = missingPeer(packages, `lagent ${command}`, error);
      throw new CliError(missing.message, { cause: error });
    }
  }
}
