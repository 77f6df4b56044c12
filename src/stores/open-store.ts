import { ConfigurationError } from '../schema/errors';
import { MemoryStore } from './memory-store';
import type { SessionStore, StoreOptions } from './types';

/**
 * Opens the store a URL names, as `lagent serve --store` takes it:
 *
 * - `sqlite:./sessions.db`, `sqlite:/var/lib/app/sessions.db` (a file; `sqlite::memory:` for none) — SQLiteStore;
 * - `redis://host:6379/0`, `rediss://...` — RedisStore;
 * - `postgres://user:pass@host/db`, `postgresql://...` — PostgresStore;
 * - `memory:` — a MemoryStore (this process only).
 *
 * Each store's driver is loaded only when its scheme is named; a missing one is a `ConfigurationError` saying
 * what to install. Anything else is a `ConfigurationError` listing the schemes.
 *
 * @example
 * const store = await openStore(process.env.SESSION_STORE ?? 'sqlite:./sessions.db');
 */
export async function openStore(url: string, options: StoreOptions = {}): Promise<SessionStore> {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new ConfigurationError({ message: 'openStore needs a store URL, e.g. sqlite:./sessions.db' });
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'sqlite': {
      const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
      if (path === '')
        throw new ConfigurationError({ message: `${url}: name a file, e.g. sqlite:./sessions.db` });
      const { SQLiteStore } = await import('./sqlite-store');
      return new SQLiteStore({ ...options, path });
    }
    case 'redis':
    case 'rediss': {
      const { RedisStore } = await import('./redis-store');
      return new RedisStore({ ...options, url });
    }
    case 'postgres':
    case 'postgresql': {
      const { PostgresStore } = await import('./postgres-store');
      return new PostgresStore({ ...options, connectionString: url });
    }
    case 'memory':
      return new MemoryStore(options);
    default:
      throw new ConfigurationError({
        message: `unknown store ${JSON.stringify(url.replace(/\/\/[^@/]*@/, '//***@'))}: use sqlite:FILE, redis://..., postgres://... or memory:`,
      });
  }
}
