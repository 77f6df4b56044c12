import type { LagentMessageJSON } from '../../src/schema/agent-message';
import type { SessionTurn } from '../../src/stores/types';

/** The turn a worker commits: two messages naming who made it, its index, and the version it was made on. */
export function workerTurn(who: string, k: number, version: number, pad = 0): SessionTurn {
  const text = (part: string) => JSON.stringify({ who, k, version, part, pad: 'p'.repeat(pad) });
  return {
    append: {
      memory: [message(who, text('a')), message(who, text('b'))],
    },
  };
}

function message(sender: string, content: string): LagentMessageJSON {
  return { sender, content, formatted: null, extra_info: null, type: null, receiver: null, stream_state: 0 };
}

/** What a message of {@link workerTurn} says. */
export function readWorkerMessage(message: { content: unknown }): {
  who: string;
  k: number;
  version: number;
  part: string;
  pad: string;
} {
  return JSON.parse(message.content as string);
}
