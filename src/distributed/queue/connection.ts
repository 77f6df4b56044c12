import type { Redis, RedisOptions } from 'ioredis';
import { ConfigurationError } from '../../schema/errors';
import { QueueConnectionError } from './errors';
import type { QueuePeers } from './load';

/** Where Redis is: a URL (`redis://host:port/db`, `rediss://...`) or ioredis options. */
export type RedisConnection = string | RedisOptions;

/** The connection as ioredis options (a URL parsed the way ioredis parses it), for BullMQ's own clients. */
export function connectionOptions(connection: RedisConnection): RedisOptions {
  if (typeof connection === 'string') {
    let url: URL;
    try {
      url = new URL(connection);
    } catch {
      throw new ConfigurationError({ message: `connection: not a Redis URL: ${JSON.stringify(connection)}` });
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new ConfigurationError({
        message: `connection: expected a redis:// or rediss:// URL, got ${url.protocol}`,
      });
    }
    const options: RedisOptions = { host: url.hostname || '127.0.0.1', port: Number(url.port || 6379) };
    if (url.username) options.username = decodeURIComponent(url.username);
    if (url.password) options.password = decodeURIComponent(url.password);
    const db = url.pathname.replace(/^\//, '');
    if (db) options.db = Number(db);
    if (url.protocol === 'rediss:') options.tls = {};
    return options;
  }
  if (typeof connection !== 'object' || connection === null) {
    throw new ConfigurationError({ message: 'connection must be a Redis URL or ioredis options' });
  }
  return { ...connection };
}

/** `host:port` for messages. */
export function describeConnection(options: RedisOptions): string {
  return options.path ?? `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}

/**
 * A connected ioredis client, or a {@link QueueConnectionError} as soon as the first attempt fails (ioredis
 * would otherwise retry for ever while calls hang). Later drops reconnect on their own.
 */
export async function connectRedis(
  peers: QueuePeers,
  options: RedisOptions,
  extra: RedisOptions = {},
): Promise<Redis> {
  const settings: RedisOptions = {
    connectTimeout: 5_000,
    ...options,
    ...extra,
    lazyConnect: true,
  };
  // ioredis's own RedisOptions does not fit its constructor under exactOptionalPropertyTypes.
  const redis = new peers.Redis(settings as never);
  // Errors after the first connection are reported through the calls that meet them.
  let first: Error | undefined;
  redis.on('error', (error: Error) => {
    first ??= error;
  });
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    const reason = first ?? (error as Error);
    throw new QueueConnectionError({
      message: `could not connect to Redis at ${describeConnection(options)}: ${reason.message}`,
      cause: reason,
    });
  }
  return redis;
}

/** Closes a connection: politely when it is up, at once when it is not (a QUIT would wait for a reconnect). */
export async function closeRedis(redis: Redis | undefined): Promise<void> {
  if (redis === undefined) return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * Closes BullMQ objects (a Worker, a QueueEvents), gracefully while Redis is up. BullMQ's close waits for
 * Redis to come back when it is down (its QUIT sits in ioredis's offline queue, and a client that is between
 * reconnection attempts never ends), so when `redis` is or goes down this disconnects them instead, which
 * stops their reconnection timers: nothing is left running.
 */
export async function closeBullMQ(
  redis: Redis | undefined,
  items: readonly { close(): Promise<void>; disconnect(): Promise<void> }[],
  graceful: Promise<unknown>,
): Promise<void> {
  let onClose: (() => void) | undefined;
  const down = new Promise<'down'>((resolve) => {
    if (redis === undefined || redis.status !== 'ready') resolve('down');
    else {
      onClose = () => resolve('down');
      redis.once('close', onClose);
    }
  });
  const outcome = await Promise.race([graceful.then(() => 'closed' as const), down]);
  if (onClose) redis?.off('close', onClose);
  if (outcome === 'closed') return;
  for (const item of items) item.disconnect().catch(() => {});
  await Promise.race([graceful, new Promise((resolve) => setTimeout(resolve, 100).unref())]);
}
