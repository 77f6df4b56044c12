import { ConfigurationError, missingPeer } from '../../schema/errors';

/** The parts of the optional peers the queue classes use, loaded on first use (never at import time). */
export interface QueuePeers {
  bullmq: typeof import('bullmq');
  Redis: typeof import('ioredis').default;
}

let loaded: Promise<QueuePeers> | undefined;

/**
 * Loads `bullmq` and `ioredis` with dynamic `import()`; a missing package is a {@link ConfigurationError}
 * saying what to install, named after the class that needs them.
 */
export function loadQueuePeers(feature: string): Promise<QueuePeers> {
  loaded ??= Promise.all([import('bullmq'), import('ioredis')]).then(([bullmq, ioredis]) => ({
    bullmq,
    Redis: ioredis.Redis ?? ioredis.default,
  }));
  return loaded.catch((error: unknown) => {
    loaded = undefined;
    throw missingPeer(['bullmq', 'ioredis'], feature, error);
  });
}
